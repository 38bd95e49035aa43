import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Outbox, type OutboxItem } from '../../agent/outbox';
import type { HttpAnswer } from '../../agent/service-client';
import { tempDir } from '../support/services';

const answer = (status: number, text = ''): HttpAnswer => ({ status, text, json: <T>() => JSON.parse(text) as T });
const progress = (stage: string): OutboxItem => ({ kind: 'progress', method: 'PUT', path: '/infra-envs/ie/hosts/h/progress', body: { current_stage: stage } });

/** A service that is away (503 or no answer) for its first `downFor` calls, then takes everything. */
function flakyService(downFor: number, refuse: (item: OutboxItem) => number | undefined = () => undefined) {
  const delivered: string[] = [];
  let calls = 0;
  const send = async (item: OutboxItem): Promise<HttpAnswer> => {
    calls++;
    if (calls <= downFor) {
      if (calls % 2) throw new Error('ECONNREFUSED');
      return answer(503, 'database unavailable');
    }
    const status = refuse(item);
    if (status) return answer(status, 'refused');
    delivered.push((item.body as { current_stage: string }).current_stage);
    return answer(204);
  };
  return { send, delivered, calls: () => calls };
}

describe('agent outbox', () => {
  it('answers at once when the service takes the report', async () => {
    const svc = flakyService(0);
    const box = new Outbox(svc.send, { baseMs: 1, capMs: 2 });
    expect((await box.post(progress('Installing'))).answer?.status).toBe(204);
    expect(box.pending).toBe(0);
  });

  it('keeps every report while the service is away far past three retries, and delivers them in order', async () => {
    const svc = flakyService(25);
    const box = new Outbox(svc.send, { baseMs: 1, capMs: 2 });
    for (const s of ['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting']) expect((await box.post(progress(s))).answer).toBeUndefined();
    expect(box.pending).toBe(4);
    await box.flush();
    expect(svc.delivered).toEqual(['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting']);
    expect(svc.calls()).toBeGreaterThan(25);
    expect(box.pending).toBe(0);
  });

  it('drops a report the service refuses with a 4xx (its considered answer) and goes on with the next', async () => {
    const logged: string[] = [];
    const svc = flakyService(3, (item) => ((item.body as { current_stage: string }).current_stage === 'Bogus' ? 409 : undefined));
    const box = new Outbox(svc.send, { baseMs: 1, capMs: 2, log: (msg) => logged.push(msg) });
    await box.post(progress('Installing'));
    await box.post(progress('Bogus'));
    await box.post(progress('Rebooting'));
    await box.flush();
    expect(svc.delivered).toEqual(['Installing', 'Rebooting']);
    expect(logged).toEqual(['the service refused a queued report']);
  });

  it('keeps undelivered reports on disk, and a restarted agent sends them before anything new', async () => {
    const dir = tempDir('outbox');
    const stop = new AbortController();
    const down = flakyService(Number.MAX_SAFE_INTEGER);
    const first = new Outbox(down.send, { dir, name: 'outbox-ie', baseMs: 1, capMs: 2, signal: stop.signal });
    await first.post(progress('Installing'));
    await first.post(progress('Writing image to disk'));
    stop.abort();
    await first.flush();
    const file = path.join(dir, 'outbox-ie.json');
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toHaveLength(2);

    const up = flakyService(0);
    const second = new Outbox(up.send, { dir, name: 'outbox-ie', baseMs: 1, capMs: 2 });
    await second.post(progress('Rebooting'));
    await second.flush();
    expect(up.delivered).toEqual(['Installing', 'Writing image to disk', 'Rebooting']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual([]);
  });

  it('keeps a logs archive beside its list (not in it) while the service is away, and a restarted agent sends its bytes, in order', async () => {
    const dir = tempDir('outbox');
    const stop = new AbortController();
    const archive = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 251));
    const logs: OutboxItem = { kind: 'logs', method: 'POST', path: '/clusters/c/logs?logs_type=host', body: undefined, file: { name: 'h.tar.gz', bytes: archive } };
    const first = new Outbox(flakyService(Number.MAX_SAFE_INTEGER).send, { dir, name: 'outbox-ie', baseMs: 1, capMs: 2, signal: stop.signal });
    await first.post(progress('Rebooting'));
    expect((await first.post(logs)).answer).toBeUndefined();
    stop.abort();
    await first.flush();
    const list = readFileSync(path.join(dir, 'outbox-ie.json'), 'utf8');
    expect(list.length).toBeLessThan(1000);
    expect(readdirSync(dir).filter((f) => f.startsWith('outbox-ie-file-'))).toHaveLength(1);

    const sent: Array<{ kind: string; bytes?: Buffer }> = [];
    const second = new Outbox(async (item) => (sent.push({ kind: item.kind, bytes: item.file?.bytes }), answer(204)), { dir, name: 'outbox-ie', baseMs: 1, capMs: 2 });
    await second.flush();
    expect(sent.map((x) => x.kind)).toEqual(['progress', 'logs']);
    expect(sent[1]!.bytes?.equals(archive)).toBe(true);
    // Delivered: off the list and off the disk.
    expect(readdirSync(dir).filter((f) => f.startsWith('outbox-ie-file-'))).toEqual([]);
  });
});

describe('install steps an agent started', () => {
  it('runs a step id once, across a restart of the agent', async () => {
    const { StartedSteps } = await import('../../agent/started-steps');
    const dir = tempDir('started');
    const first = StartedSteps.inDir(dir, 'started-ie');
    expect(first.claim('install-a1')).toBe(true);
    expect(first.claim('install-a1')).toBe(false);
    const restarted = StartedSteps.inDir(dir, 'started-ie');
    expect(restarted.claim('install-a1')).toBe(false);
    expect(restarted.claim('install-a1-r1')).toBe(true);
    // Without a directory (the simulated fleet) it holds in memory only.
    const memory = StartedSteps.inDir(undefined, 'x');
    expect(memory.claim('install-a1')).toBe(true);
    expect(StartedSteps.inDir(undefined, 'x').claim('install-a1')).toBe(true);
  });

  it('knows, after a restart, the step an earlier run started and never finished, and journals every run of a step', async () => {
    const { StartedSteps } = await import('../../agent/started-steps');
    const { writeFileSync } = await import('node:fs');
    const dir = tempDir('interrupted');
    const first = StartedSteps.inDir(dir, 'started-ie');
    first.claim('install-a1');
    // Killed while running it: no finish recorded.
    const restarted = StartedSteps.inDir(dir, 'started-ie');
    expect(restarted.interrupted()).toEqual(['install-a1']);
    expect(restarted.claim('install-a1')).toBe(false);
    restarted.finish('install-a1');
    expect(StartedSteps.inDir(dir, 'started-ie').interrupted()).toEqual([]);
    restarted.claim('install-a1-r1');
    restarted.finish('install-a1-r1');
    const journal = readFileSync(path.join(dir, 'started-ie.log'), 'utf8').trim().split('\n');
    expect(journal.map((l) => l.split(' ')[2])).toEqual(['install-a1', 'install-a1-r1']);
    // A ledger in the first format (ids only, no end recorded) reports nothing as interrupted.
    writeFileSync(path.join(dir, 'old.json'), JSON.stringify(['install-a1']));
    const old = StartedSteps.inDir(dir, 'old');
    expect(old.interrupted()).toEqual([]);
    expect(old.claim('install-a1')).toBe(false);
  });
});
