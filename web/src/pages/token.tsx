import { useState, type FormEvent } from 'react';
import { api, auth, errorMessage } from '../api';
import { ErrorMessage, PageTitle } from '../components/ui';
import { navigate } from '../router';

/** AUTH_TYPE=local: the user pastes a token minted with `landfall token user <name>`. */
export function TokenPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    auth.setToken(token.trim());
    try {
      // Prove the token before leaving the page: a wrong one is reported here.
      await api.listClusters();
      onSignedIn();
      const next = new URLSearchParams(location.search).get('next');
      // Only a path of this app: never another origin (//host, or /\host that browsers read the same).
      navigate(next && /^\/(?![/\\])/.test(next) ? next : '/', { replace: true });
    } catch (err) {
      auth.clear();
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="card narrow">
      <PageTitle>Sign in</PageTitle>
      <p className="muted">
        This Landfall service asks for a token. An administrator mints one with <code>landfall token user &lt;name&gt;</code>. It is kept in this browser tab
        only.
      </p>
      <form onSubmit={submit}>
        <div className="field">
          <label htmlFor="token">API token</label>
          <textarea id="token" rows={4} required value={token} onChange={(e) => setToken(e.target.value)} spellCheck={false} autoComplete="off" />
        </div>
        <ErrorMessage error={error} />
        <div className="actions">
          <button type="submit" className="btn btn-primary" disabled={busy || !token.trim()}>
            {busy ? 'Checking…' : 'Sign in'}
          </button>
        </div>
      </form>
    </section>
  );
}
