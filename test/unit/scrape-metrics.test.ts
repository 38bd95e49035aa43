/**
 * The tests' scrape of a replicated service (test/support/replicas.ts): the
 * process-local series are summed over the replicas, including a series only
 * the second replica has. An install whose every `Installing` report reached
 * the second replica once lost its stage histogram this way (a CI flake).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawnSync } from 'node:child_process';
import { scrapeMetrics } from '../support/replicas';

const family = (stages: Array<[string, number]>) =>
  [
    '# HELP landfall_hosts Hosts by status',
    '# TYPE landfall_hosts gauge',
    'landfall_hosts{status="installed"} 5',
    '# HELP landfall_host_install_stage_duration_seconds How long hosts spent in each install stage',
    '# TYPE landfall_host_install_stage_duration_seconds histogram',
    ...stages.flatMap(([stage, n]) => [
      `landfall_host_install_stage_duration_seconds_bucket{le="+Inf",stage="${stage}",role="master"} ${n}`,
      `landfall_host_install_stage_duration_seconds_sum{stage="${stage}",role="master"} ${n * 2}`,
      `landfall_host_install_stage_duration_seconds_count{stage="${stage}",role="master"} ${n}`,
    ]),
    '# HELP landfall_api_requests_total HTTP requests this API process received, by process id',
    '# TYPE landfall_api_requests_total counter',
    'landfall_api_requests_total 7',
    '',
  ].join('\n');

const servers: Server[] = [];
const serve = (text: string) =>
  new Promise<string>((resolve) => {
    const s = createServer((_req, res) => res.end(text)).listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`));
    servers.push(s);
  });
afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

it('sums the union of the replicas process-local series, shared ones taken once', async () => {
  const targets = [await serve(family([['Writing image to disk', 2]])), await serve(family([['Writing image to disk', 1], ['Installing', 3]]))];
  const text = await scrapeMetrics({ url: targets[0]!, balancer: { targets: () => targets } as never });
  expect(text).toMatch(/^landfall_host_install_stage_duration_seconds_count\{stage="Writing image to disk",role="master"\} 3$/m);
  // Only the second replica observed it: still there.
  expect(text).toMatch(/^landfall_host_install_stage_duration_seconds_count\{stage="Installing",role="master"\} 3$/m);
  expect(text).toMatch(/^landfall_host_install_stage_duration_seconds_sum\{stage="Installing",role="master"\} 6$/m);
  expect(text).toMatch(/^landfall_api_requests_total 14$/m);
  // Read from PostgreSQL by every replica: not summed.
  expect(text).toMatch(/^landfall_hosts\{status="installed"\} 5$/m);
  // Each family's samples follow its header, as promtool asks.
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  expect(promtool.error?.message).toBeUndefined();
  expect([promtool.status, promtool.stdout + promtool.stderr]).toEqual([0, '']);
});
