import { useCallback, useEffect, useRef, useState } from 'react';
import { errorMessage } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads with `load` and, with `intervalMs`, keeps polling; a failed poll keeps
 * the last good data on screen and shows the error next to it.
 */
export function useApi<T>(load: () => Promise<T>, deps: unknown[], intervalMs?: number): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(() => setTick((t) => t + 1), []);

  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const v = await loadRef.current();
        if (cancelled) return;
        setData(v);
        setError(undefined);
      } catch (err) {
        if (!cancelled) setError(errorMessage(err));
      } finally {
        if (!cancelled) {
          setLoading(false);
          if (intervalMs) timer = setTimeout(() => void run(), intervalMs);
        }
      }
    };
    void run();
    return () => {
      cancelled = true;
      if (timer) clearTimeout(timer);
    };
    // The caller's deps decide when to load again (as with useEffect).
  }, [...deps, tick, intervalMs]);

  return { data, error, loading, reload };
}

/** Runs one action at a time, keeping its error for the page to show. */
export function useAction() {
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<string>();
  const run = useCallback(async <T>(name: string, fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(name);
    setError(undefined);
    try {
      return await fn();
    } catch (err) {
      setError(errorMessage(err));
      return undefined;
    } finally {
      setBusy(undefined);
    }
  }, []);
  return { busy, error, run, setError };
}
