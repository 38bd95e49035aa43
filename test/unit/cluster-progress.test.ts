import { clusterProgress } from '../../src/domain/install-stages';

describe('cluster install progress', () => {
  const hosts = (stage: string | undefined) => [
    { role: 'master', bootstrap: true, current_stage: stage },
    { role: 'master', bootstrap: false, current_stage: stage },
    { role: 'master', bootstrap: false, current_stage: stage },
    { role: 'worker', bootstrap: false, current_stage: stage },
    { role: 'worker', bootstrap: false, current_stage: stage },
  ];

  it('is undefined before an install and 100 once installed', () => {
    expect(clusterProgress('ready', 3, hosts(undefined))).toBeUndefined();
    expect(clusterProgress('installed', 3, hosts('Done'))?.total_percentage).toBe(100);
  });

  it('grows with the hosts’ stages, weighted as AS weighs the phases', () => {
    const start = clusterProgress('installing', 3, hosts('Starting installation'))!;
    const writing = clusterProgress('installing', 3, hosts('Writing image to disk'))!;
    const done = clusterProgress('finalizing', 3, hosts('Done'))!;
    expect(start.installing_stage_percentage).toBeGreaterThan(0);
    expect(writing.installing_stage_percentage).toBeGreaterThan(start.installing_stage_percentage);
    expect(done.installing_stage_percentage).toBe(100);
    // 0.1·100 + 0.7·100 + 0.15·50
    expect(done.total_percentage).toBe(88);
    expect(writing.total_percentage).toBe(Math.round(10 + 0.7 * writing.installing_stage_percentage));
    expect(clusterProgress('preparing-for-installation', 3, hosts(undefined))).toMatchObject({ installing_stage_percentage: 0, total_percentage: 5 });
  });

  it('counts a failed host as no progress and keeps the others', () => {
    const h = hosts('Rebooting');
    h[4] = { role: 'worker', bootstrap: false, current_stage: 'Failed' };
    const p = clusterProgress('error', 3, h)!;
    expect(p.installing_stage_percentage).toBeLessThan(clusterProgress('error', 3, hosts('Rebooting'))!.installing_stage_percentage);
  });
});
