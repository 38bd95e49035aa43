import { useEffect, useState, type FormEvent } from 'react';
import { api, type InfraEnv, type PresignedUrl } from '../api';
import { useAction } from '../hooks';
import { ErrorMessage, Link, PageTitle } from '../components/ui';
import { clusterPath } from '../router';
import { InstallStartedNote, type StepProps } from './cluster';

interface StaticHost {
  yaml: string;
  macs: string;
}

type StaticConfig = Array<{ network_yaml?: string; mac_interface_map?: Array<{ mac_address: string; logical_nic_name?: string }> }>;

function staticFromInfraEnv(ie: InfraEnv): StaticHost[] {
  try {
    const list = JSON.parse(ie.static_network_config ?? '[]') as StaticConfig;
    return list.map((s) => ({ yaml: s.network_yaml ?? '', macs: (s.mac_interface_map ?? []).map((m) => `${m.mac_address}=${m.logical_nic_name ?? ''}`).join('\n') }));
  } catch {
    return [];
  }
}

/** "52:54:00:aa:bb:cc=eth0" per line → the API's MAC-to-NIC map. */
function macMap(text: string) {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [mac, nic] = l.split('=').map((x) => x.trim());
      return { mac_address: mac ?? '', logical_nic_name: nic || undefined };
    });
}

export function ImageStep({ cluster, infraEnv, reload }: StepProps) {
  const hosts = cluster.hosts?.length ?? 0;
  return (
    <div className="card">
      <PageTitle>Discovery image</PageTitle>
      <InstallStartedNote cluster={cluster} />
      <p className="muted">Boot every machine of the cluster from this image. Each one then calls home, reports its hardware and shows up under Hosts.</p>
      {infraEnv ? <ImageSettings key={infraEnv.id} infraEnv={infraEnv} onSaved={reload} /> : <CreateInfraEnv clusterId={cluster.id} name={cluster.name ?? 'cluster'} release={cluster.openshift_version} onCreated={reload} />}
      <div className="actions split">
        <p className="muted" role="status" aria-live="polite">
          {hosts === 0 ? 'No host has booted the image yet.' : `${hosts} host${hosts === 1 ? ' has' : 's have'} booted the image.`}
        </p>
        <Link href={clusterPath(cluster.id, 'hosts')} className="btn btn-primary">
          Next: hosts
        </Link>
      </div>
    </div>
  );
}

/** Only when the infra-env was not created with the cluster (for example, registered through the API without one). */
function CreateInfraEnv({ clusterId, name, release, onCreated }: { clusterId: string; name: string; release: string | undefined; onCreated: () => void }) {
  const [pullSecret, setPullSecret] = useState('');
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run('create', async () => {
      await api.createInfraEnv({ name: `${name}-infra-env`, cluster_id: clusterId, pull_secret: pullSecret.trim(), image_type: 'full-iso', openshift_version: release });
      onCreated();
    });
  };
  return (
    <form onSubmit={submit}>
      <p>This cluster has no discovery image yet. Its pull secret is needed once more to create one.</p>
      <div className="field">
        <label htmlFor="ie-pull-secret">Pull secret</label>
        <textarea id="ie-pull-secret" rows={3} required value={pullSecret} onChange={(e) => setPullSecret(e.target.value)} spellCheck={false} />
      </div>
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button type="submit" className="btn btn-primary" disabled={action.busy !== undefined}>
          Create the discovery image
        </button>
      </div>
    </form>
  );
}

function ImageSettings({ infraEnv, onSaved }: { infraEnv: InfraEnv; onSaved: () => void }) {
  const [type, setType] = useState<'full-iso' | 'minimal-iso'>(infraEnv.type === 'minimal-iso' ? 'minimal-iso' : 'full-iso');
  const [httpProxy, setHttpProxy] = useState(infraEnv.proxy?.http_proxy ?? '');
  const [httpsProxy, setHttpsProxy] = useState(infraEnv.proxy?.https_proxy ?? '');
  const [noProxy, setNoProxy] = useState(infraEnv.proxy?.no_proxy ?? '');
  const [statics, setStatics] = useState<StaticHost[]>(() => staticFromInfraEnv(infraEnv));
  const [url, setUrl] = useState<PresignedUrl>();
  const [copied, setCopied] = useState(false);
  const action = useAction();

  useEffect(() => setCopied(false), [url]);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    await action.run('save', async () => {
      await api.updateInfraEnv(infraEnv.id, {
        image_type: type,
        proxy: { http_proxy: httpProxy.trim() || null, https_proxy: httpsProxy.trim() || null, no_proxy: noProxy.trim() || null },
        static_network_config: statics.filter((s) => s.yaml.trim()).map((s) => ({ network_yaml: s.yaml, mac_interface_map: macMap(s.macs) })),
      });
      // A change retires the earlier image URLs: fetch a fresh one.
      setUrl(await api.imageUrl(infraEnv.id));
      onSaved();
    });
  };

  const generate = () => action.run('url', async () => setUrl(await api.imageUrl(infraEnv.id)));

  return (
    <>
      <form onSubmit={save} className="stack">
        <fieldset>
          <legend>Image type</legend>
          <div className="radio-row">
            <label className="radio">
              <input type="radio" name="image-type" value="full-iso" checked={type === 'full-iso'} onChange={() => setType('full-iso')} />
              <span>
                <strong>Full image</strong>
                <span className="muted small"> Everything on the ISO; best for slow or no internet.</span>
              </span>
            </label>
            <label className="radio">
              <input type="radio" name="image-type" value="minimal-iso" checked={type === 'minimal-iso'} onChange={() => setType('minimal-iso')} />
              <span>
                <strong>Minimal image</strong>
                <span className="muted small"> Small ISO; hosts fetch the rest over the network.</span>
              </span>
            </label>
          </div>
        </fieldset>
        <details>
          <summary>Proxy</summary>
          <div className="grid-3">
            <div className="field">
              <label htmlFor="http-proxy">HTTP proxy URL</label>
              <input id="http-proxy" type="url" placeholder="http://proxy.example.com:3128" value={httpProxy} onChange={(e) => setHttpProxy(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="https-proxy">HTTPS proxy URL</label>
              <input id="https-proxy" type="url" placeholder="http://proxy.example.com:3128" value={httpsProxy} onChange={(e) => setHttpsProxy(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="no-proxy">No proxy for</label>
              <input id="no-proxy" placeholder=".example.com,10.0.0.0/8" value={noProxy} onChange={(e) => setNoProxy(e.target.value)} />
            </div>
          </div>
        </details>
        <details open={statics.length > 0}>
          <summary>Static network configuration ({statics.length} host{statics.length === 1 ? '' : 's'})</summary>
          <p className="muted small">Without it, hosts use DHCP. Each entry is an nmstate YAML for one host and the MAC addresses of its NICs.</p>
          {statics.map((s, i) => (
            <div className="static-host" key={i}>
              <div className="field">
                <label htmlFor={`nmstate-${i}`}>Host {i + 1}: nmstate YAML</label>
                <textarea id={`nmstate-${i}`} rows={6} spellCheck={false} value={s.yaml} onChange={(e) => setStatics(statics.map((x, j) => (j === i ? { ...x, yaml: e.target.value } : x)))} />
              </div>
              <div className="field">
                <label htmlFor={`macs-${i}`}>Host {i + 1}: MAC=NIC, one per line</label>
                <textarea id={`macs-${i}`} rows={3} spellCheck={false} placeholder="52:54:00:aa:bb:cc=eth0" value={s.macs} onChange={(e) => setStatics(statics.map((x, j) => (j === i ? { ...x, macs: e.target.value } : x)))} />
              </div>
              <button type="button" className="btn btn-ghost btn-small" onClick={() => setStatics(statics.filter((_, j) => j !== i))}>
                Remove host {i + 1}
              </button>
            </div>
          ))}
          <button type="button" className="btn btn-small" onClick={() => setStatics([...statics, { yaml: '', macs: '' }])}>
            Add a host
          </button>
        </details>
        <ErrorMessage error={action.error} />
        <div className="actions">
          <button type="submit" className="btn">
            {action.busy === 'save' ? 'Saving…' : 'Save image settings'}
          </button>
          <button type="button" className="btn btn-primary" onClick={() => void generate()} disabled={action.busy !== undefined}>
            {action.busy === 'url' ? 'Generating…' : 'Generate download URL'}
          </button>
        </div>
      </form>
      {url && (
        <div className="download" aria-live="polite">
          <label htmlFor="image-url">Discovery image URL</label>
          <div className="input-row">
            <input id="image-url" readOnly value={url.url} onFocus={(e) => e.target.select()} />
            <button
              type="button"
              className="btn"
              onClick={() => {
                void navigator.clipboard?.writeText(url.url).then(() => setCopied(true));
              }}
            >
              {copied ? 'Copied' : 'Copy'}
            </button>
            <a className="btn btn-primary" href={url.url} download>
              Download ISO
            </a>
          </div>
          <p className="muted small">
            {url.expires_at ? `Valid until ${new Date(url.expires_at).toLocaleString()}. ` : ''}
            <code>curl -o discovery.iso '{url.url}'</code>
          </p>
        </div>
      )}
    </>
  );
}
