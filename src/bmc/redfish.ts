/**
 * A small Redfish client and the RedfishDriver built on it: power state and
 * ComputerSystem.Reset, virtual media insert/eject, boot source override.
 * HTTP Basic on every call (every BMC takes it; sessions would add a login
 * call and a logout to forget). Resources are found by following links, as
 * the standard asks, not by guessing paths: sushy-tools 2.x puts VirtualMedia
 * under the System, most real BMCs under the Manager that `Links.ManagedBy`
 * names; both are found the same way.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { BmcError, type BmcDriver, type BmcSystem, type BmcTarget, type BootMode, type BootTarget, type PowerState, type ResetType, type VirtualMediaState } from './driver';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const link = (v: unknown): string | undefined => {
  const id = obj(v)['@odata.id'];
  return typeof id === 'string' ? id : undefined;
};

export interface RedfishOptions {
  /** Per call; InsertMedia gets longer, since some BMCs (sushy-tools) fetch the image inside the call. */
  timeoutMs?: number;
  mediaTimeoutMs?: number;
  /** How long a 202 task is followed before the call counts as failed. */
  taskTimeoutMs?: number;
}

interface Answer {
  status: number;
  body: Json;
  etag?: string;
  location?: string;
}

/** The BMC's own words from a Redfish error body (extended info first), or the start of whatever it sent. */
function answerText(body: Json, text: string): string {
  const err = obj(body.error);
  const ext = Array.isArray(err['@Message.ExtendedInfo']) ? (err['@Message.ExtendedInfo'] as unknown[]).map((m) => obj(m).Message).filter((m): m is string => typeof m === 'string') : [];
  const words = [typeof err.message === 'string' ? err.message : undefined, ...ext].filter(Boolean) as string[];
  if (words.length) return [...new Set(words)].join('; ');
  return text.replace(/\s+/g, ' ').trim().slice(0, 300) || 'no body';
}

export class RedfishClient {
  private readonly dispatcher: Dispatcher | undefined;
  private readonly auth: string;

  constructor(
    private readonly target: BmcTarget,
    private readonly opts: RedfishOptions = {},
  ) {
    this.auth = `Basic ${Buffer.from(`${target.credentials.username}:${target.credentials.password}`).toString('base64')}`;
    this.dispatcher = target.insecure ? new Agent({ connect: { rejectUnauthorized: false } }) : undefined;
  }

  get address(): string {
    return this.target.address.address;
  }

  /** Never let a BMC's echo of the password reach a message or a log. */
  private scrub(s: string): string {
    const pw = this.target.credentials.password;
    return pw.length >= 3 ? s.split(pw).join('***') : s;
  }

  private fail(method: string, path: string, what: string, extra: { status?: number; answer?: string; transient: boolean }): BmcError {
    const msg = this.scrub(`BMC ${this.address}: ${method} ${path} ${what}`);
    return new BmcError(msg, { address: this.address, method, path, ...extra, answer: extra.answer && this.scrub(extra.answer) });
  }

  async call(method: 'GET' | 'PATCH' | 'POST', path: string, body?: Json, opts: { timeoutMs?: number; ifMatch?: string } = {}): Promise<Answer> {
    const url = new URL(path, this.target.address.endpoint).toString();
    const timeout = opts.timeoutMs ?? this.opts.timeoutMs ?? 30_000;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method,
        headers: {
          authorization: this.auth,
          accept: 'application/json',
          'odata-version': '4.0',
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...(opts.ifMatch ? { 'if-match': opts.ifMatch } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        dispatcher: this.dispatcher,
        headersTimeout: timeout,
        bodyTimeout: timeout,
        maxRedirections: 0,
      });
    } catch (err) {
      const e = err as { code?: string; message?: string };
      throw this.fail(method, path, `could not be sent: ${e.code ?? ''} ${e.message ?? String(err)}`.replace(/\s+/g, ' ').trim(), { transient: true });
    }
    const text = await res.body.text().catch(() => '');
    let parsed: Json = {};
    try {
      parsed = text ? obj(JSON.parse(text)) : {};
    } catch {
      parsed = {};
    }
    const header = (n: string) => {
      const v = res.headers[n];
      return Array.isArray(v) ? v[0] : v;
    };
    if (res.statusCode >= 400) {
      const answer = answerText(parsed, text);
      // 5xx and 429 may pass; a 4xx is the BMC refusing what was asked.
      throw this.fail(method, path, `answered ${res.statusCode}: ${answer}`, { status: res.statusCode, answer, transient: res.statusCode >= 500 || res.statusCode === 429 });
    }
    const answer: Answer = { status: res.statusCode, body: parsed, etag: header('etag'), location: header('location') };
    if (res.statusCode === 202 && answer.location && method !== 'GET') return this.followTask(method, path, answer.location);
    return answer;
  }

  /** A 202 with a task monitor: poll it until the task is done (Redfish spec, "Asynchronous operations"). */
  private async followTask(method: string, path: string, monitor: string): Promise<Answer> {
    const deadline = Date.now() + (this.opts.taskTimeoutMs ?? 120_000);
    for (;;) {
      const t = await this.call('GET', monitor);
      const state = t.body.TaskState;
      if (t.status !== 202 && (state === undefined || ['Completed'].includes(String(state)))) return t;
      if (['Exception', 'Killed', 'Cancelled'].includes(String(state))) {
        const msgs = Array.isArray(t.body.Messages) ? (t.body.Messages as unknown[]).map((m) => obj(m).Message).filter(Boolean).join('; ') : '';
        throw this.fail(method, path, `ended as task ${monitor} in state ${String(state)}: ${msgs || 'no message'}`, { answer: msgs, transient: false });
      }
      if (Date.now() > deadline) throw this.fail(method, path, `task ${monitor} did not finish in time (last state ${String(state ?? 'unknown')})`, { transient: true });
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

const POWER_STATES: readonly PowerState[] = ['On', 'Off', 'PoweringOn', 'PoweringOff', 'Paused'];

export class RedfishDriver implements BmcDriver {
  readonly kind = 'redfish' as const;
  private readonly client: RedfishClient;
  private systemPath?: string;
  private mediaPath?: string;

  constructor(
    private readonly target: BmcTarget,
    opts: RedfishOptions = {},
  ) {
    this.client = new RedfishClient(target, opts);
    this.systemPath = target.address.systemPath;
  }

  get address(): string {
    return this.target.address.address;
  }

  private err(what: string): BmcError {
    return new BmcError(`BMC ${this.address}: ${what}`, { address: this.address, transient: false });
  }

  /** The System the address names, or the BMC's only one. */
  private async resolveSystem(): Promise<string> {
    if (this.systemPath) return this.systemPath;
    const root = await this.client.call('GET', '/redfish/v1/');
    const systemsPath = link(root.body.Systems) ?? '/redfish/v1/Systems';
    const members = ((await this.client.call('GET', systemsPath)).body.Members as unknown[] | undefined) ?? [];
    const paths = members.map(link).filter((p): p is string => Boolean(p));
    if (paths.length !== 1) throw this.err(`GET ${systemsPath} lists ${paths.length} systems; name one in bmc_address (…/redfish/v1/Systems/<id>)`);
    this.systemPath = paths[0]!;
    return this.systemPath;
  }

  private async getSystem(): Promise<{ path: string; body: Json; etag?: string }> {
    const path = await this.resolveSystem();
    const a = await this.client.call('GET', path);
    return { path, body: a.body, etag: a.etag };
  }

  async system(): Promise<BmcSystem> {
    const { path, body } = await this.getSystem();
    const boot = obj(body.Boot);
    return {
      path,
      uuid: typeof body.UUID === 'string' ? body.UUID.toLowerCase() : undefined,
      powerState: POWER_STATES.includes(body.PowerState as PowerState) ? (body.PowerState as PowerState) : 'Unknown',
      bootTarget: typeof boot.BootSourceOverrideTarget === 'string' ? boot.BootSourceOverrideTarget : undefined,
      bootMode: typeof boot.BootSourceOverrideEnabled === 'string' ? boot.BootSourceOverrideEnabled : undefined,
      manufacturer: typeof body.Manufacturer === 'string' ? body.Manufacturer : undefined,
      model: typeof body.Model === 'string' ? body.Model : undefined,
    };
  }

  async powerState(): Promise<PowerState> {
    return (await this.system()).powerState;
  }

  async reset(type: ResetType): Promise<void> {
    const { path, body } = await this.getSystem();
    const action = obj(obj(body.Actions)['#ComputerSystem.Reset']);
    const target = typeof action.target === 'string' ? action.target : `${path}/Actions/ComputerSystem.Reset`;
    const allowed = Array.isArray(action['ResetType@Redfish.AllowableValues']) ? (action['ResetType@Redfish.AllowableValues'] as string[]) : undefined;
    // Some BMCs offer only ForceOn, or only PowerCycle for a cold restart: use the nearest they offer.
    const nearest: Record<ResetType, string[]> = { On: ['On', 'ForceOn'], ForceOff: ['ForceOff'], GracefulShutdown: ['GracefulShutdown'], GracefulRestart: ['GracefulRestart'], ForceRestart: ['ForceRestart', 'PowerCycle'] };
    const chosen = allowed ? nearest[type].find((t) => allowed.includes(t)) : type;
    if (!chosen) throw this.err(`POST ${target} cannot ${type}: the BMC allows ResetType ${allowed!.join(', ')}`);
    await this.client.call('POST', target, { ResetType: chosen });
  }

  /** The CD (or DVD) virtual media device, under the System or under a Manager that manages it. */
  private async findMedia(): Promise<{ path: string; body: Json }> {
    if (this.mediaPath) return { path: this.mediaPath, body: (await this.client.call('GET', this.mediaPath)).body };
    const { path, body } = await this.getSystem();
    const collections: string[] = [];
    const own = link(body.VirtualMedia);
    if (own) collections.push(own);
    for (const m of (obj(body.Links).ManagedBy as unknown[] | undefined) ?? []) {
      const mp = link(m);
      if (!mp) continue;
      const vm = link((await this.client.call('GET', mp)).body.VirtualMedia);
      if (vm && !collections.includes(vm)) collections.push(vm);
    }
    if (!collections.length) throw this.err(`neither ${path} nor its managers (Links.ManagedBy) link to VirtualMedia: this BMC offers no virtual media`);
    for (const c of collections) {
      const members = ((await this.client.call('GET', c)).body.Members as unknown[] | undefined) ?? [];
      for (const m of members) {
        const mp = link(m);
        if (!mp) continue;
        const dev = (await this.client.call('GET', mp)).body;
        const types = Array.isArray(dev.MediaTypes) ? (dev.MediaTypes as string[]) : [];
        if (types.some((t) => t === 'CD' || t === 'DVD') || (!types.length && /cd|dvd/i.test(String(dev.Id ?? mp)))) {
          this.mediaPath = mp;
          return { path: mp, body: dev };
        }
      }
    }
    throw this.err(`no CD or DVD virtual media device in ${collections.join(', ')}`);
  }

  async virtualMedia(): Promise<VirtualMediaState> {
    const { path, body } = await this.findMedia();
    return { path, inserted: body.Inserted === true, image: typeof body.Image === 'string' && body.Image ? body.Image : undefined };
  }

  private actionTarget(path: string, body: Json, name: 'InsertMedia' | 'EjectMedia'): string {
    const a = obj(obj(body.Actions)[`#VirtualMedia.${name}`]);
    return typeof a.target === 'string' ? a.target : `${path}/Actions/VirtualMedia.${name}`;
  }

  async insertMedia(imageUrl: string): Promise<void> {
    const { path, body } = await this.findMedia();
    // Most BMCs refuse to insert into an occupied drive.
    if (body.Inserted === true) await this.client.call('POST', this.actionTarget(path, body, 'EjectMedia'), {});
    await this.client.call('POST', this.actionTarget(path, body, 'InsertMedia'), { Image: imageUrl, Inserted: true, WriteProtected: true }, { timeoutMs: 300_000 });
  }

  async ejectMedia(): Promise<void> {
    const { path, body } = await this.findMedia();
    if (body.Inserted !== true && !body.Image) return;
    await this.client.call('POST', this.actionTarget(path, body, 'EjectMedia'), {});
  }

  async setBootDevice(target: BootTarget, mode: BootMode): Promise<void> {
    const { path, etag } = await this.getSystem();
    await this.client.call('PATCH', path, { Boot: { BootSourceOverrideTarget: target, BootSourceOverrideEnabled: mode } }, { ifMatch: etag });
  }
}
