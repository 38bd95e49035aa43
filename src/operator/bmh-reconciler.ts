/**
 * BareMetalHost → a Landfall BMC enrolment (`POST /v2/infra-envs/{id}/bmc-hosts`): Landfall itself
 * inserts the infra-env's discovery ISO as virtual media and powers the machine on, where the
 * reference hands the ISO URL to Metal3. The InfraEnv is named by the BareMetalHost's
 * infraenvs.agent-install.landfall.io label, the credentials by spec.bmc.credentialsName (a Secret
 * with username and password). The enrolment is found again by its BMC address before one is made.
 * As in the reference, the Agent of the host that boots from it is approved: the machine was
 * declared, so its arrival needs no second yes.
 */
import type { KubeObject } from './kube-client';
import { LandfallError, isLandfallNotFound, type Json } from './landfall-client';
import { ensureFinalizer, removeFinalizer, writeStatus, type OperatorContext } from './context';
import { FINALIZER, INFRAENV_LABEL, RT } from './resources';
import { specHash } from './spec-mapping';
import { infraEnvIdOf } from './infra-env-reconciler';

/** Landfall's enrolment status as Metal3's provisioning state. */
const STATE: Record<string, string> = { enrolling: 'registering', booting: 'provisioning', attached: 'provisioned', failed: 'registering' };

async function findEnrolment(ctx: OperatorContext, infraEnvId: string, address: string): Promise<Json | undefined> {
  const list = (await ctx.landfall.request('GET', `/infra-envs/${infraEnvId}/bmc-hosts`)) as Json[];
  return list.find((b) => String(b.bmc_address).toLowerCase() === address.toLowerCase());
}

export async function reconcileBareMetalHost(ctx: OperatorContext, bmhKey: string): Promise<void> {
  const [ns, name] = bmhKey.split('/') as [string, string];
  let bmh = await ctx.kube.find(RT.bareMetalHost, ns, name);
  if (!bmh) return;
  const ieName = bmh.metadata.labels?.[INFRAENV_LABEL];
  // Looked up when not indexed yet (after a restart), rather than reported as waiting for a moment.
  const infraEnvId = ieName ? await infraEnvIdOf(ctx, `${ns}/${ieName}`) : undefined;
  const address = String(bmh.spec?.bmc?.address ?? '');

  if (bmh.metadata.deletionTimestamp) {
    if ((bmh.metadata.finalizers ?? []).includes(FINALIZER.bareMetalHost) && infraEnvId) {
      const found = await findEnrolment(ctx, infraEnvId, address).catch((err: unknown) => (isLandfallNotFound(err) ? undefined : Promise.reject(err)));
      if (found) await ctx.landfall.request('DELETE', `/infra-envs/${infraEnvId}/bmc-hosts/${found.id}`).catch((err: unknown) => (isLandfallNotFound(err) ? undefined : Promise.reject(err)));
    }
    await removeFinalizer(ctx, RT.bareMetalHost, bmh, FINALIZER.bareMetalHost);
    return;
  }
  bmh = await ensureFinalizer(ctx, RT.bareMetalHost, bmh, FINALIZER.bareMetalHost);

  let error: string | undefined;
  let enrolment: Json | undefined;
  let applied = bmh.status?.landfall?.appliedSpecHash as string | undefined;
  try {
    if (!ieName) throw new Error(`label ${INFRAENV_LABEL} naming the InfraEnv is required`);
    if (!infraEnvId) throw new Error(`waiting for InfraEnv ${ns}/${ieName} to have its Landfall infra-env`);
    const credName = bmh.spec?.bmc?.credentialsName as string | undefined;
    const secret = credName ? await ctx.kube.find(RT.secret, ns, credName) : undefined;
    if (!secret?.data?.username || !secret.data.password) throw new Error(`credentials Secret ${ns}/${credName ?? '(spec.bmc.credentialsName)'} with keys username and password not found`);
    const desired = {
      bmc_address: address,
      bmc_credentials: { username: Buffer.from(secret.data.username, 'base64').toString(), password: Buffer.from(secret.data.password, 'base64').toString() },
      ...(bmh.spec?.bootMACAddress ? { boot_mac_address: bmh.spec.bootMACAddress } : {}),
      ...(bmh.spec?.bmc?.disableCertificateVerification ? { disable_certificate_verification: true } : {}),
    };
    const hash = specHash(desired);
    enrolment = await findEnrolment(ctx, infraEnvId, address);
    if (enrolment && applied !== undefined && applied !== hash) {
      // Changed BMC details: enrol again with them (an enrolment's details are fixed once made).
      await ctx.landfall.request('DELETE', `/infra-envs/${infraEnvId}/bmc-hosts/${enrolment.id}`);
      enrolment = undefined;
    }
    if (!enrolment) {
      enrolment = await ctx.landfall.request('POST', `/infra-envs/${infraEnvId}/bmc-hosts`, desired);
      ctx.log.info({ resource: bmhKey, infraEnvId, bmcHostId: enrolment.id }, 'machine enrolled by its BMC');
    }
    applied = hash;
  } catch (err) {
    if (err instanceof LandfallError && err.status >= 500) throw err;
    error = (err as Error).message;
  }

  // The host that booted from it: its Agent is approved (and says which BareMetalHost it is).
  if (enrolment?.host_id) {
    const agent = ctx.cache.get(RT.agent, `${ns}/${enrolment.host_id}`);
    if (agent && (agent.spec?.approved !== true || agent.metadata.labels?.[BMH_LABEL] !== name)) {
      await ctx.kube.mergePatch(RT.agent, ns, agent.metadata.name, { metadata: { labels: { [BMH_LABEL]: name } }, spec: { approved: true } });
    }
  }

  const failed = enrolment?.status === 'failed';
  await writeStatus(ctx, RT.bareMetalHost, bmh, {
    provisioning: { state: enrolment ? STATE[enrolment.status as string] ?? 'registering' : 'registering', ID: enrolment?.id ?? '' },
    operationalStatus: error || failed ? 'error' : 'OK',
    errorType: error ? 'registration error' : failed ? 'provisioning error' : '',
    errorMessage: error ?? (failed ? enrolment!.status_info : ''),
    poweredOn: enrolment ? ['booting', 'attached'].includes(enrolment.status) : false,
    landfall: { bmcHostID: enrolment?.id ?? null, status: enrolment?.status ?? null, statusInfo: enrolment?.status_info ?? null, hostID: enrolment?.host_id ?? null, appliedSpecHash: applied ?? null },
  });
}

export const BMH_LABEL = 'agent-install.landfall.io/bmh';

/** The BareMetalHosts of an InfraEnv (its label), for the events that concern its BMCs. */
export function bareMetalHostsOf(ctx: OperatorContext, ieKey: string): KubeObject[] {
  const [ns, name] = ieKey.split('/') as [string, string];
  return ctx.cache.list(RT.bareMetalHost, ns).filter((b) => b.metadata.labels?.[INFRAENV_LABEL] === name);
}
