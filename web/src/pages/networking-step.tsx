import { useState, type FormEvent } from 'react';
import { api } from '../api';
import { useAction } from '../hooks';
import { ErrorMessage, Link, PageTitle } from '../components/ui';
import { failingValidations, hostNetworks, networkSuggestions, PRE_INSTALL } from '../model';
import { clusterPath } from '../router';
import { InstallStartedNote, type StepProps } from './cluster';

export function NetworkingStep({ cluster, reload }: StepProps) {
  const single = cluster.control_plane_count === 1 || cluster.high_availability_mode === 'None';
  const suggested = networkSuggestions(cluster);
  const derived = hostNetworks(cluster.hosts ?? []);
  const editable = PRE_INSTALL.includes(cluster.status);

  const [machine, setMachine] = useState(cluster.machine_networks?.[0]?.cidr ?? '');
  const [apiVip, setApiVip] = useState(cluster.api_vips?.[0]?.ip ?? '');
  const [ingressVip, setIngressVip] = useState(cluster.ingress_vips?.[0]?.ip ?? '');
  const [clusterNet, setClusterNet] = useState(cluster.cluster_networks?.[0]?.cidr ?? cluster.cluster_network_cidr ?? '10.128.0.0/14');
  const [hostPrefix, setHostPrefix] = useState(String(cluster.cluster_networks?.[0]?.host_prefix ?? cluster.cluster_network_host_prefix ?? 23));
  const [serviceNet, setServiceNet] = useState(cluster.service_networks?.[0]?.cidr ?? cluster.service_network_cidr ?? '172.30.0.0/16');
  const [saved, setSaved] = useState(false);
  const action = useAction();

  const networks = [...new Set([...(suggested.machine_network ? [suggested.machine_network] : []), ...derived])];
  const canSuggest = Boolean(suggested.machine_network || suggested.api_vip || suggested.ingress_vip);
  const netValidations = failingValidations(cluster).filter((v) => v.category === 'network');

  const useSuggestions = () => {
    if (suggested.machine_network) setMachine(suggested.machine_network);
    if (!single && suggested.api_vip) setApiVip(suggested.api_vip);
    if (!single && suggested.ingress_vip) setIngressVip(suggested.ingress_vip);
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    const ok = await action.run('save', () =>
      api.updateCluster(cluster.id, {
        machine_networks: machine.trim() ? [{ cidr: machine.trim() }] : [],
        cluster_networks: [{ cidr: clusterNet.trim(), host_prefix: Number(hostPrefix) }],
        service_networks: [{ cidr: serviceNet.trim() }],
        ...(single ? {} : { api_vips: apiVip.trim() ? [{ ip: apiVip.trim() }] : [], ingress_vips: ingressVip.trim() ? [{ ip: ingressVip.trim() }] : [] }),
      }),
    );
    if (ok) {
      setSaved(true);
      reload();
    }
  };

  return (
    <div className="card">
      <PageTitle>Networking</PageTitle>
      <InstallStartedNote cluster={cluster} />
      <form onSubmit={save} className="stack">
        <fieldset disabled={!editable}>
          <legend>Machine network and virtual IPs</legend>
          {canSuggest && (
            <div className="suggestion">
              <span>
                From the hosts: machine network <strong>{suggested.machine_network ?? '—'}</strong>
                {!single && (
                  <>
                    , free addresses <strong>{suggested.api_vip ?? '—'}</strong> (API) and <strong>{suggested.ingress_vip ?? '—'}</strong> (Ingress)
                  </>
                )}
                .
              </span>
              <button type="button" className="btn btn-small" onClick={useSuggestions}>
                Use suggestions
              </button>
            </div>
          )}
          {!canSuggest && <p className="muted small">Suggestions appear once hosts have reported their networks.</p>}
          <div className="grid-3">
            <div className="field">
              <label htmlFor="machine-network">Machine network (CIDR)</label>
              <input id="machine-network" list="machine-networks" placeholder="192.168.1.0/24" value={machine} onChange={(e) => setMachine(e.target.value)} aria-describedby="machine-help" />
              <datalist id="machine-networks">
                {networks.map((n) => (
                  <option key={n} value={n} />
                ))}
              </datalist>
              <p id="machine-help" className="help">
                {networks.length ? `Hosts have addresses in ${networks.join(', ')}.` : 'The network the hosts share.'}
              </p>
            </div>
            {!single && (
              <>
                <div className="field">
                  <label htmlFor="api-vip">API virtual IP</label>
                  <input id="api-vip" placeholder={suggested.api_vip ?? '192.168.1.250'} value={apiVip} onChange={(e) => setApiVip(e.target.value)} />
                </div>
                <div className="field">
                  <label htmlFor="ingress-vip">Ingress virtual IP</label>
                  <input id="ingress-vip" placeholder={suggested.ingress_vip ?? '192.168.1.251'} value={ingressVip} onChange={(e) => setIngressVip(e.target.value)} />
                </div>
              </>
            )}
          </div>
        </fieldset>
        <fieldset disabled={!editable}>
          <legend>Cluster-internal networks</legend>
          <div className="grid-3">
            <div className="field">
              <label htmlFor="cluster-network">Cluster (pod) network</label>
              <input id="cluster-network" required value={clusterNet} onChange={(e) => setClusterNet(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="host-prefix">Host prefix</label>
              <input id="host-prefix" type="number" min={1} max={128} required value={hostPrefix} onChange={(e) => setHostPrefix(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="service-network">Service network</label>
              <input id="service-network" required value={serviceNet} onChange={(e) => setServiceNet(e.target.value)} />
            </div>
          </div>
        </fieldset>
        {netValidations.length > 0 && (
          <ul className="validations" aria-label="Network checks not passing">
            {netValidations.map((v) => (
              <li key={v.id} className={`validation validation-${v.status === 'failure' ? 'bad' : 'pending'}`}>
                <span className="validation-id">{v.id}</span> {v.message}
                {v.hint && <div className="hint">{v.hint}</div>}
              </li>
            ))}
          </ul>
        )}
        <ErrorMessage error={action.error} />
        {saved && !action.error && (
          <p className="alert alert-ok" role="status">
            Network settings saved.
          </p>
        )}
        <div className="actions split">
          <Link href={clusterPath(cluster.id, 'hosts')} className="btn btn-ghost">
            Back: hosts
          </Link>
          <span className="actions">
            <button type="submit" className="btn" disabled={!editable || action.busy !== undefined}>
              {action.busy ? 'Saving…' : 'Save networking'}
            </button>
            <Link href={clusterPath(cluster.id, 'review')} className="btn btn-primary">
              Next: review
            </Link>
          </span>
        </div>
      </form>
    </div>
  );
}
