/**
 * One cluster, one step at a time: the URL names both, the API holds the
 * state. The cluster is polled while the page is open, so hosts appear and
 * statuses move without a reload.
 */
import { useEffect } from 'react';
import { api, type Cluster, type InfraEnv } from '../api';
import { useApi } from '../hooks';
import { ErrorMessage, Link, Loading, StatusBadge } from '../components/ui';
import { clusterPath, navigate, STEPS, type Step } from '../router';
import { defaultStep, INSTALLING, PRE_INSTALL } from '../model';
import { ImageStep } from './image-step';
import { HostsStep } from './hosts-step';
import { NetworkingStep } from './networking-step';
import { ReviewStep } from './review-step';
import { ProgressStep } from './progress-step';
import { DoneStep } from './done-step';

export interface StepProps {
  cluster: Cluster;
  infraEnv: InfraEnv | undefined;
  reload: () => void;
}

const LABELS: Record<Step, string> = { image: 'Discovery image', hosts: 'Hosts', networking: 'Networking', review: 'Review', progress: 'Progress', done: 'Done' };

function stepEnabled(step: Step, c: Cluster): boolean {
  const pre = PRE_INSTALL.includes(c.status);
  if (step === 'progress') return !pre;
  if (step === 'done') return c.status === 'installed' || c.status === 'adding-hosts';
  return true;
}

export function ClusterPage({ clusterId, step }: { clusterId: string; step: Step | undefined }) {
  const installing = (s: string | undefined) => s !== undefined && (INSTALLING.includes(s) || s === 'installed' || s === 'adding-hosts');
  const cluster = useApi(() => api.getCluster(clusterId), [clusterId], 2000);
  const infraEnvs = useApi(() => api.infraEnvsOf(clusterId), [clusterId], installing(cluster.data?.status) ? undefined : 5000);
  const infraEnv = infraEnvs.data?.[0];

  useEffect(() => {
    if (!step && cluster.data && infraEnvs.data) navigate(clusterPath(clusterId, defaultStep(cluster.data, infraEnvs.data.length > 0)), { replace: true });
  }, [step, cluster.data, infraEnvs.data, clusterId]);

  if (!cluster.data) {
    return cluster.error ? (
      <section>
        <ErrorMessage error={cluster.error} onRetry={cluster.reload} />
        <p>
          <Link href="/">Back to the clusters</Link>
        </p>
      </section>
    ) : (
      <Loading what="the cluster" />
    );
  }
  const c = cluster.data;
  const reload = () => {
    cluster.reload();
    infraEnvs.reload();
  };
  const props: StepProps = { cluster: c, infraEnv, reload };
  const current = step ?? defaultStep(c, Boolean(infraEnv));

  return (
    <section>
      <div className="cluster-head">
        <div>
          <p className="crumbs">
            <Link href="/">Clusters</Link> / <span>{c.name}</span>
          </p>
          <h2 className="cluster-name">
            {c.name} <StatusBadge status={c.status} />
          </h2>
          <p className="muted small">
            {c.openshift_version} · {c.base_dns_domain ?? 'no base domain'} · {c.control_plane_count ?? 3} control plane{(c.control_plane_count ?? 3) === 1 ? '' : 's'} · {c.status_info}
          </p>
        </div>
      </div>
      <nav aria-label="Install steps" className="stepper">
        <ol>
          {STEPS.map((s, i) => {
            const enabled = stepEnabled(s, c);
            return (
              <li key={s} className={s === current ? 'current' : ''}>
                {enabled ? (
                  <Link href={clusterPath(c.id, s)} aria-current={s === current ? 'step' : undefined}>
                    <span className="step-n" aria-hidden="true">{i + 1}</span> {LABELS[s]}
                  </Link>
                ) : (
                  <span className="disabled" aria-disabled="true">
                    <span className="step-n" aria-hidden="true">{i + 1}</span> {LABELS[s]}
                  </span>
                )}
              </li>
            );
          })}
        </ol>
      </nav>
      {cluster.error && <ErrorMessage error={`Showing the last known state: ${cluster.error}`} onRetry={cluster.reload} />}
      <ErrorMessage error={infraEnvs.error} onRetry={infraEnvs.reload} />
      {current === 'image' && (infraEnvs.data ? <ImageStep {...props} /> : <Loading what="the discovery image" />)}
      {current === 'hosts' && <HostsStep {...props} />}
      {current === 'networking' && <NetworkingStep {...props} />}
      {current === 'review' && <ReviewStep {...props} />}
      {current === 'progress' && <ProgressStep {...props} />}
      {current === 'done' && <DoneStep {...props} />}
    </section>
  );
}

/** Shown on pre-install steps once an install has started: they are for setting up, not for watching. */
export function InstallStartedNote({ cluster }: { cluster: Cluster }) {
  if (PRE_INSTALL.includes(cluster.status)) return null;
  return (
    <div className="alert alert-info" role="status">
      The installation has started; settings can no longer change. <Link href={clusterPath(cluster.id, cluster.status === 'installed' ? 'done' : 'progress')}>Follow it here</Link>.
    </div>
  );
}
