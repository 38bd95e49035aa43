import { api } from '../api';
import { useApi } from '../hooks';
import { Empty, ErrorMessage, Link, Loading, PageTitle, ProgressBar, StatusBadge } from '../components/ui';
import { clusterPath } from '../router';
import { clusterPercent } from '../model';

export function ClustersPage() {
  const clusters = useApi(() => api.listClusters(), [], 5000);
  const list = [...(clusters.data ?? [])].sort((a, b) => (b.created_at ?? '').localeCompare(a.created_at ?? ''));

  return (
    <section>
      <div className="page-head">
        <PageTitle>Clusters</PageTitle>
        <Link href="/clusters/new" className="btn btn-primary">
          Create cluster
        </Link>
      </div>
      <ErrorMessage error={clusters.error} onRetry={clusters.reload} />
      {clusters.loading && !clusters.data && <Loading what="clusters" />}
      {clusters.data && list.length === 0 && (
        <Empty title="No clusters yet">
          <p>Create a cluster, boot your machines from its discovery image, and install Kubernetes on them.</p>
          <Link href="/clusters/new" className="btn btn-primary">
            Create your first cluster
          </Link>
        </Empty>
      )}
      {list.length > 0 && (
        <div className="table-wrap card flush">
          <table className="table">
            <caption className="sr-only">Clusters</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Release</th>
                <th scope="col">Status</th>
                <th scope="col">Progress</th>
                <th scope="col">Hosts</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {list.map((c) => (
                <tr key={c.id}>
                  <td>
                    <Link href={clusterPath(c.id)} className="strong">
                      {c.name ?? c.id}
                    </Link>
                    {c.base_dns_domain && <div className="muted small">{`${c.name}.${c.base_dns_domain}`}</div>}
                  </td>
                  <td>{c.openshift_version}</td>
                  <td>
                    <StatusBadge status={c.status} />
                  </td>
                  <td className="cell-progress">
                    <ProgressBar value={clusterPercent(c)} label={`${c.name} install progress`} tone={c.status === 'installed' ? 'good' : c.status === 'error' ? 'bad' : 'busy'} />
                  </td>
                  <td>{c.total_host_count ?? c.hosts?.length ?? 0}</td>
                  <td className="muted small">{c.created_at ? new Date(c.created_at).toLocaleString() : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
