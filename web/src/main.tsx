import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { auth, onUnauthorized } from './api';
import { Link } from './components/ui';
import { navigate, parseRoute, useLocation } from './router';
import { ClustersPage } from './pages/clusters';
import { CreateClusterPage } from './pages/create-cluster';
import { ClusterPage } from './pages/cluster';
import { TokenPage } from './pages/token';
import { InsightsPage } from './pages/insights';
import './styles.css';

function App() {
  const path = useLocation();
  const route = parseRoute(path);
  const [signedIn, setSignedIn] = useState(Boolean(auth.token()));

  useEffect(
    () =>
      // Any 401 (no token, expired, wrong key) means: ask for a token, then come back here.
      onUnauthorized(() => {
        auth.clear();
        setSignedIn(false);
        if (location.pathname !== '/token') navigate(`/token?next=${encodeURIComponent(location.pathname)}`, { replace: true });
      }),
    [],
  );

  let page;
  switch (route.page) {
    case 'clusters':
      page = <ClustersPage />;
      break;
    case 'new':
      page = <CreateClusterPage />;
      break;
    case 'token':
      page = <TokenPage onSignedIn={() => setSignedIn(true)} />;
      break;
    case 'insights':
      page = <InsightsPage />;
      break;
    case 'cluster':
      page = <ClusterPage key={route.clusterId} clusterId={route.clusterId} step={route.step} />;
      break;
    default:
      page = (
        <div className="empty">
          <h1>Page not found</h1>
          <p>
            <Link href="/">Back to the clusters</Link>
          </p>
        </div>
      );
  }

  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Landfall
        </Link>
        <nav aria-label="Main">
          <Link href="/">Clusters</Link>
          <Link href="/clusters/new">New cluster</Link>
          <Link href="/insights">Insights</Link>
        </nav>
        <div className="topbar-end">
          {signedIn && (
            <button
              type="button"
              className="btn btn-ghost btn-small"
              onClick={() => {
                auth.clear();
                setSignedIn(false);
                navigate('/token');
              }}
            >
              Sign out
            </button>
          )}
        </div>
      </header>
      <main id="main" className="container">
        {page}
      </main>
    </>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
