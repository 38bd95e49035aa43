/**
 * Every activity heartbeats while it runs. A worker that is SIGKILLed sends
 * no failure: Temporal learns its activity is lost only when a timeout fires.
 * With a heartbeat timeout (a few tens of seconds, set where the workflow
 * proxies its activities) that is the time it takes; without one it is the
 * whole start-to-close timeout (minutes), sized for the slowest activity.
 */
import { Context } from '@temporalio/activity';

const EVERY_MS = 3000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- activity functions of any signature
type Activities = Record<string, (...args: any[]) => Promise<unknown>>;

export function heartbeating<T extends Activities>(activities: T): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        let ctx: Context | undefined;
        try {
          ctx = Context.current();
        } catch {
          // Called outside a worker (a test calling the function directly): nothing to heartbeat to.
        }
        const timer = ctx ? setInterval(() => ctx!.heartbeat(), EVERY_MS) : undefined;
        try {
          ctx?.heartbeat();
          return await fn(...args);
        } finally {
          clearInterval(timer);
        }
      },
    ]),
  ) as T;
}
