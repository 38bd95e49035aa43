/**
 * The Grafana dashboard (deploy/grafana/landfall.json) and the Prometheus
 * alert rules (deploy/prometheus/landfall-rules.yml) query only metrics
 * Landfall exports (names read from the registry src/metrics.ts builds), and
 * Prometheus' own promtool accepts them: the rules file passes `check rules`
 * and its unit tests (`test rules`), and every dashboard query parses.
 * promtool comes from Debian's prometheus package (scripts/install-system-tools.sh);
 * without it these tests fail, they do not skip.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { createMetrics } from '../../src/metrics';
import type { Db } from '../../src/db/database';

const root = path.resolve(__dirname, '../..');
const DASHBOARD = path.join(root, 'deploy/grafana/landfall.json');
const RULES = path.join(root, 'deploy/prometheus/landfall-rules.yml');
const RULES_TESTS = path.join(root, 'deploy/prometheus/landfall-rules.test.yml');

/** Every series name /metrics can carry: the registry's metrics, with a histogram's _bucket, _sum and _count. */
function exportedSeries(): Set<string> {
  // The registry is only listed, never collected: no database is touched.
  const { registry } = createMetrics({} as Db);
  const out = new Set<string>();
  for (const m of registry.getMetricsAsArray() as unknown as Array<{ name: string; type: string }>) {
    if (m.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(`${m.name}${s}`);
    else out.add(m.name);
  }
  return out;
}

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression selects: identifiers that are not functions, keywords, labels or durations. */
export function metricNames(expr: string): string[] {
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const m of s.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const before = s[m.index - 1] ?? ' ';
    const after = s.slice(m.index + m[0].length).trimStart()[0];
    if (/[0-9.$]/.test(before) || after === '(' || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.push(m[0]);
  }
  return names;
}

function promtool(args: string[], cwd = root) {
  const r = spawnSync('promtool', args, { cwd, encoding: 'utf8' });
  if (r.error) throw new Error(`promtool is needed (Debian package prometheus, installed by scripts/install-system-tools.sh): ${r.error.message}`);
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Array<{ expr: string; refId: string; datasource?: { uid: string } }>;
}

describe('metric name extraction', () => {
  it.each([
    ['sum by (outcome) (max without (instance, pod) (increase(landfall_installs_total{outcome="failed"}[$__range])))', ['landfall_installs_total']],
    ['histogram_quantile(0.95, sum by (le, stage) (rate(landfall_host_install_stage_duration_seconds_bucket[1h]))) > 1800', ['landfall_host_install_stage_duration_seconds_bucket']],
    ['a_total / clamp_min(b_total offset 5m, 1) and on(x) c', ['a_total', 'b_total', 'c']],
    ['absent(landfall_clusters) or vector(1e3)', ['landfall_clusters']],
    ['topk(10, x{y="by (z)"})', ['x']],
  ])('%s', (expr, expected) => {
    expect(metricNames(expr)).toEqual(expected);
  });
});

describe('Grafana dashboard', () => {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { uid: string; title: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string; query: string }> } };
  const panels = dash.panels.filter((p) => p.type !== 'row');
  const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
  const exported = exportedSeries();

  it('is a dashboard with a Prometheus data source variable, unique panel ids and no overlapping panels', () => {
    expect(dash).toMatchObject({ uid: 'landfall-installs', title: 'Landfall installs' });
    expect(dash.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }));
    const ids = dash.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) {
      expect([p.title, p.datasource?.uid]).toEqual([p.title, '${datasource}']);
      expect([p.title, (p.targets ?? []).length > 0]).toEqual([p.title, true]);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    }
    const cells = new Map<string, string>();
    for (const p of dash.panels) {
      for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
        for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
          expect([`${x},${y}`, cells.get(`${x},${y}`)]).toEqual([`${x},${y}`, undefined]);
          cells.set(`${x},${y}`, p.title);
        }
      }
    }
  });

  it('queries only metrics Landfall exports, and each query names one', () => {
    expect(exported.size).toBeGreaterThan(5);
    const unknown = queries.flatMap((q) => metricNames(q.expr).filter((n) => !exported.has(n)).map((n) => `${q.panel}: ${n}`));
    expect(unknown).toEqual([]);
    expect(queries.filter((q) => metricNames(q.expr).length === 0)).toEqual([]);
    // The install questions are on the board: outcomes and failing stages, stage durations, validations.
    const used = new Set(queries.flatMap((q) => metricNames(q.expr)));
    for (const m of ['landfall_installs_total', 'landfall_installed_clusters_first_attempt_ratio', 'landfall_host_install_stage_duration_seconds_bucket', 'landfall_host_validation_failures_total', 'landfall_hosts', 'landfall_clusters']) expect([m, used.has(m)]).toEqual([m, true]);
  });

  it('every query parses as PromQL (promtool, with Grafana’s interval variables filled in)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'landfall-dashboard-'));
    try {
      const fill = (e: string) => e.replace(/\$__rate_interval|\$__interval/g, '5m').replace(/\$__range/g, '1d');
      const rules = { groups: [{ name: 'dashboard', rules: queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: fill(q.expr) })) }] };
      writeFileSync(path.join(dir, 'dashboard-queries.yml'), JSON.stringify(rules));
      const r = promtool(['check', 'rules', path.join(dir, 'dashboard-queries.yml')]);
      expect([r.status, r.out]).toEqual([0, expect.stringContaining(`SUCCESS: ${queries.length} rules found`)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Prometheus alert rules', () => {
  const doc = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Array<{ alert: string; expr: string; annotations: Record<string, string> }> }> };
  const rules = doc.groups.flatMap((g) => g.rules);

  it('pass promtool check rules', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect([r.status, r.out]).toEqual([0, expect.stringContaining(`SUCCESS: ${rules.length} rules found`)]);
  });

  it('fire and stay quiet as their promtool unit tests say', () => {
    const r = promtool(['test', 'rules', path.basename(RULES_TESTS)], path.dirname(RULES_TESTS));
    expect([r.status, r.out]).toEqual([0, expect.stringContaining('SUCCESS')]);
    // Every alert is exercised by the unit tests.
    const tests = parse(readFileSync(RULES_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
    const fired = new Set(tests.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    expect(rules.map((x) => x.alert).filter((a) => !fired.has(a))).toEqual([]);
  });

  it('query only metrics Landfall exports, and each names one', () => {
    const exported = exportedSeries();
    expect(rules.flatMap((x) => metricNames(x.expr).filter((n) => !exported.has(n)).map((n) => `${x.alert}: ${n}`))).toEqual([]);
    expect(rules.filter((x) => metricNames(x.expr).length === 0).map((x) => x.alert)).toEqual([]);
  });

  it('a broken rule is refused by promtool (the check can fail)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'landfall-rules-'));
    try {
      writeFileSync(path.join(dir, 'bad.yml'), 'groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: sum by (stage (landfall_hosts)\n');
      expect(promtool(['check', 'rules', path.join(dir, 'bad.yml')]).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
