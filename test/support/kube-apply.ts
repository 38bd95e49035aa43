/**
 * `kubectl apply -k` for the tests and benchmarks (no kubectl here): the
 * resources a kustomization.yaml lists, in its order, created or, when they
 * exist, merge-patched with the manifest's labels, spec and data.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeClient, KubeObject, ResourceType } from '../../src/operator/kube-client';
import { RT } from '../../src/operator/resources';

const BY_KIND: Record<string, ResourceType> = Object.fromEntries(Object.values(RT).map((rt) => [rt.kind, rt]));

export function readKustomization(dir: string): KubeObject[] {
  const k = parseAllDocuments(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'))[0]!.toJS() as { resources: string[] };
  return k.resources.flatMap((f) => parseAllDocuments(readFileSync(path.join(dir, f), 'utf8')).map((d) => d.toJS() as KubeObject));
}

export async function applyObjects(kube: KubeClient, objects: KubeObject[]): Promise<void> {
  for (const o of objects) {
    const rt = BY_KIND[o.kind!];
    if (!rt) throw new Error(`no resource type for kind ${o.kind}`);
    const ns = rt.namespaced ? o.metadata.namespace : undefined;
    if (await kube.find(rt, ns, o.metadata.name)) {
      const { metadata, spec, data, stringData } = o;
      await kube.mergePatch(rt, ns, o.metadata.name, { ...(metadata.labels ? { metadata: { labels: metadata.labels } } : {}), ...(spec ? { spec } : {}), ...(data ? { data } : {}), ...(stringData ? { stringData } : {}) });
    } else {
      await kube.create(rt, ns, o);
    }
  }
}
