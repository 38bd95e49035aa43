/** Small shared pieces: links that route without reloading, states, badges, bars. */
import { useEffect, useRef, type AnchorHTMLAttributes, type ReactNode } from 'react';
import { navigate } from '../router';

export function Link({ href, children, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  return (
    <a
      href={href}
      {...rest}
      onClick={(e) => {
        // Let the browser handle new-tab and download clicks.
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

export function ErrorMessage({ error, onRetry }: { error: string | undefined; onRetry?: () => void }) {
  if (!error) return null;
  return (
    <div className="alert alert-error" role="alert">
      <strong>Something went wrong:</strong> <span className="alert-text">{error}</span>
      {onRetry && (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <h2>{title}</h2>
      {children}
    </div>
  );
}

const TONE: Record<string, string> = {
  installed: 'good', known: 'good', ready: 'good', 'preparing-successful': 'good',
  insufficient: 'warn', 'pending-for-input': 'warn', discovering: 'muted', disconnected: 'bad', 'installing-pending-user-action': 'warn',
  error: 'bad', cancelled: 'bad', 'preparing-failed': 'bad',
  installing: 'busy', 'installing-in-progress': 'busy', 'preparing-for-installation': 'busy', finalizing: 'busy', rebooting: 'busy',
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONE[status] ?? 'muted'}`}>{status}</span>;
}

export function ProgressBar({ value, label, tone }: { value: number; label: string; tone?: 'good' | 'bad' | 'busy' }) {
  const v = Math.max(0, Math.min(100, Math.round(value)));
  return (
    <div className={`bar bar-${tone ?? 'busy'}`} role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={v}>
      <div className="bar-fill" style={{ width: `${v}%` }} />
      <span className="bar-text">{v}%</span>
    </div>
  );
}

/** Moves focus to a page's heading when it mounts, so keyboard and screen-reader users know the page changed. */
export function PageTitle({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus({ preventScroll: true });
  }, []);
  useEffect(() => {
    if (typeof children === 'string') document.title = `${children} · Landfall`;
  }, [children]);
  return (
    <h1 tabIndex={-1} ref={ref} className="page-title">
      {children}
    </h1>
  );
}

export function formatBytes(bytes: number | undefined): string {
  if (!bytes && bytes !== 0) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

export function formatGiB(bytes: number | undefined): string {
  if (!bytes) return '—';
  return `${Math.round(bytes / 1024 ** 3)} GiB`;
}
