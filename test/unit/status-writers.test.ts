/**
 * The transition tables are the machine that runs: status is written only by
 * src/services/status-writer.ts (through the repos' compare-and-swap), and
 * every event in the tables has a production caller that hands it to the
 * writer. Read from the source with the TypeScript parser, so a new direct
 * write or an orphaned rule fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { HOST_TRANSITIONS } from '../../src/domain/lifecycle/host-state-machine';
import { CLUSTER_TRANSITIONS } from '../../src/domain/lifecycle/cluster-state-machine';

const root = path.resolve(__dirname, '../..');
const PRODUCTION_DIRS = ['src', 'activities', 'workflows', 'agent'];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return name === 'openapi' ? [] : files(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

const sources = PRODUCTION_DIRS.flatMap((d) => files(path.join(root, d))).map((file) => ({
  file: path.relative(root, file),
  sf: ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true),
}));

/** Visits every node; a visitor that answers 'skip' leaves that node's children out. */
function walk(node: ts.Node, visit: (n: ts.Node) => void | 'skip'): void {
  if (visit(node) === 'skip') return;
  node.forEachChild((c) => walk(c, visit));
}

const propName = (p: ts.ObjectLiteralElementLike) => (p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : undefined);

/** Other aggregates keep their own status with their own table writer; they are not hosts or clusters. */
const OTHER_AGGREGATES = ['src/bmc/', 'src/db/self-checks-repo.ts'];
const WRITER = 'src/services/status-writer.ts';
const REPOS = ['src/db/hosts-repo.ts', 'src/db/clusters-repo.ts'];

describe('one status writer per aggregate', () => {
  it('no code outside the writer puts status or status_info into an insert or update', () => {
    const offenders: string[] = [];
    for (const { file, sf } of sources) {
      if (file === WRITER || REPOS.includes(file) || OTHER_AGGREGATES.some((a) => file.startsWith(a))) continue;
      walk(sf, (n) => {
        if (!ts.isCallExpression(n) || !ts.isPropertyAccessExpression(n.expression)) return;
        const method = n.expression.name.text;
        if (!['update', 'insert', 'compareAndSet', 'merge'].includes(method)) return;
        for (const arg of n.arguments) {
          if (!ts.isObjectLiteralExpression(arg)) continue;
          for (const p of arg.properties) {
            const name = propName(p);
            if (name === 'status' || name === 'status_info') offenders.push(`${file}:${sf.getLineAndCharacterOfPosition(p.getStart()).line + 1} ${method}(… ${name} …)`);
          }
        }
      });
    }
    expect(offenders).toEqual([]);
  });

  it('no SQL text writes a host\'s or cluster\'s status (knex.raw, whereRaw, a query string)', () => {
    // The object-literal check above sees knex's builder; this sees the SQL a raw statement carries.
    const writes = [/\bupdate\s+"?(hosts|clusters)"?\b[\s\S]*?\bset\b[\s\S]*?\bstatus(_info)?"?\s*=/i, /\binsert\s+into\s+"?(hosts|clusters)"?\s*\([^)]*\bstatus\b/i, /\bon\s+conflict\b[\s\S]*?\bset\b[\s\S]*?\bstatus(_info)?"?\s*=/i];
    const offenders: string[] = [];
    for (const { file, sf } of sources) {
      walk(sf, (n) => {
        // A repo's compare-and-swap as a fixed text (hosts-repo's batched refresh write): named for it, and only the
        // writer calls the repos' compare-and-swap (below).
        if (REPOS.includes(file) && ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.name.text.startsWith('COMPARE_AND_SET')) return 'skip';
        let text: string | undefined;
        if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) text = n.text;
        else if (ts.isTemplateExpression(n)) text = [n.head.text, ...n.templateSpans.map((s) => s.literal.text)].join(' ? ');
        if (text !== undefined && writes.some((re) => re.test(text))) offenders.push(`${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1} ${text.slice(0, 80)}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it('only the writer calls the repos\' compare-and-swap', () => {
    const callers = sources.filter(({ sf }) => {
      let found = false;
      walk(sf, (n) => {
        if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text.startsWith('compareAndSet')) found = true;
      });
      return found;
    });
    expect(callers.map((c) => c.file).filter((f) => !f.startsWith('src/bmc/'))).toEqual([WRITER]);
  });

  /** Production files that build an event `{ type: 'X', … }` of the given names. */
  function eventSites(events: Set<string>): Map<string, string[]> {
    const sites = new Map<string, string[]>();
    for (const { file, sf } of sources) {
      if (file.startsWith('src/domain/lifecycle/')) continue;
      walk(sf, (n) => {
        if (!ts.isObjectLiteralExpression(n)) return;
        for (const p of n.properties) {
          if (!ts.isPropertyAssignment(p) || propName(p) !== 'type') continue;
          const init = ts.isAsExpression(p.initializer) ? p.initializer.expression : p.initializer;
          if (!ts.isStringLiteral(init) || !events.has(init.text)) continue;
          sites.set(init.text, [...(sites.get(init.text) ?? []), `${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`]);
        }
      });
    }
    return sites;
  }

  it.each([
    ['host', HOST_TRANSITIONS.map((r) => r.event)],
    ['cluster', CLUSTER_TRANSITIONS.map((r) => r.event)],
  ])('every %s table event has a production caller', (_kind, names) => {
    const events = new Set(names);
    const sites = eventSites(events);
    const orphans = [...events].filter((e) => !sites.has(e));
    expect(orphans).toEqual([]);
  });

  it('the writer module is the only importer of the tables\' next-status functions outside the domain, for writing', () => {
    // nextHostStatus / nextClusterStatus may be asked (a guard check before a write, docs), but their
    // answer is written only by the writer: every file that imports them must also import the writer.
    const importers = sources.filter(({ file, sf }) => !file.startsWith('src/domain/') && /\bnext(Host|Cluster)Status\b/.test(sf.text));
    for (const { file, sf } of importers) {
      if (file === WRITER) continue;
      expect({ file, importsWriter: /status-writer/.test(sf.text) }).toEqual({ file, importsWriter: true });
    }
  });
});
