/**
 * Renders the state-machine tables as Markdown with a Mermaid diagram; the
 * docs in docs/ are this output, and a test keeps them current.
 */
import { HOST_STATES, HOST_TRANSITIONS } from './host-state-machine';
import { CLUSTER_STATES, CLUSTER_TRANSITIONS } from './cluster-state-machine';

interface AnyRule {
  event: string;
  from: readonly string[];
  to: string;
  description: string;
  guard?: unknown;
}

function render(title: string, intro: string, states: Record<string, string>, rules: readonly AnyRule[]): string {
  const id = (s: string) => s.replace(/[^a-z0-9]/gi, '_');
  const edges = new Map<string, Set<string>>();
  for (const r of rules) for (const f of r.from) {
    const key = `${id(f)} --> ${id(r.to)}`;
    if (!edges.has(key)) edges.set(key, new Set());
    edges.get(key)!.add(r.event);
  }
  const lines = [
    `# ${title}`,
    '',
    '<!-- Generated from the transition table by src/domain/lifecycle/state-machine-docs.ts; do not edit. Regenerate with: UPDATE_DOCS=1 npx jest test/unit/state-machines.test.ts -->',
    '',
    intro,
    '',
    '```mermaid',
    'stateDiagram-v2',
    ...Object.keys(states).map((s) => `    ${id(s)} : ${s}`),
    ...[...edges].map(([edge, events]) => `    ${edge} : ${[...events].join(', ')}`),
    '```',
    '',
    '## States',
    '',
    '| state | meaning |',
    '|---|---|',
    ...Object.entries(states).map(([s, d]) => `| \`${s}\` | ${d} |`),
    '',
    '## Transitions',
    '',
    '| event | from | to | when |',
    '|---|---|---|---|',
    ...rules.map((r) => `| ${r.event} | ${r.from.map((f) => `\`${f}\``).join(', ')} | \`${r.to}\` | ${r.description} |`),
    '',
  ];
  return lines.join('\n');
}

export function hostStateMachineDoc(): string {
  return render('Host state machine', 'Each rule answers one event in the listed states; guards never overlap (a test proves it), so the order of rows does not matter.', HOST_STATES, HOST_TRANSITIONS);
}

export function clusterStateMachineDoc(): string {
  return render('Cluster state machine', 'Refresh rules run on every change of the cluster or one of its hosts; the other events are user actions. Guards never overlap (a test proves it).', CLUSTER_STATES, CLUSTER_TRANSITIONS);
}
