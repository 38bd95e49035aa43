/**
 * SimulatedBmcDriver: a simulation, for the simulated demo fleet
 * (`simulated://<name>` addresses). It keeps a pretend machine's power state,
 * virtual media and boot override in this process's memory and answers as a
 * BMC would; it powers nothing, boots nothing and fetches no image. Events
 * and logs name such a BMC simulated.
 */
import type { BmcDriver, BmcSystem, BootMode, BootTarget, PowerState, ResetType, VirtualMediaState } from './driver';
import { BmcError } from './driver';

interface SimulatedMachine {
  power: PowerState;
  media?: string;
  boot: { target: BootTarget; mode: BootMode };
  /** Every call, in order: what tests and the demo read back. */
  calls: string[];
}

/** One machine per name, shared by every driver made for it in this process. */
const MACHINES = new Map<string, SimulatedMachine>();

export function simulatedMachine(name: string): SimulatedMachine {
  let m = MACHINES.get(name);
  if (!m) {
    m = { power: 'Off', boot: { target: 'Hdd', mode: 'Continuous' }, calls: [] };
    MACHINES.set(name, m);
  }
  return m;
}

export class SimulatedBmcDriver implements BmcDriver {
  readonly kind = 'simulated' as const;
  private readonly m: SimulatedMachine;

  constructor(
    private readonly name: string,
    /** Names the calls this simulated BMC refuses (for tests of the refusal path). */
    private readonly refuse: ReadonlySet<string> = new Set(),
  ) {
    this.m = simulatedMachine(name);
  }

  get address(): string {
    return `simulated://${this.name}`;
  }

  private record(call: string): void {
    this.m.calls.push(call);
    if (this.refuse.has(call.split(' ')[0]!)) throw new BmcError(`BMC ${this.address} (simulated): ${call} refused by the simulation`, { address: this.address, transient: false });
  }

  async system(): Promise<BmcSystem> {
    return { path: `/simulated/${this.name}`, powerState: this.m.power, bootTarget: this.m.boot.target, bootMode: this.m.boot.mode, manufacturer: 'Landfall', model: 'simulated machine' };
  }

  async powerState(): Promise<PowerState> {
    return this.m.power;
  }

  async reset(type: ResetType): Promise<void> {
    this.record(`reset ${type}`);
    this.m.power = type === 'ForceOff' || type === 'GracefulShutdown' ? 'Off' : 'On';
  }

  async virtualMedia(): Promise<VirtualMediaState> {
    return { path: `/simulated/${this.name}/cd`, inserted: Boolean(this.m.media), image: this.m.media };
  }

  async insertMedia(imageUrl: string): Promise<void> {
    this.record('insertMedia');
    this.m.media = imageUrl;
  }

  async ejectMedia(): Promise<void> {
    this.record('ejectMedia');
    this.m.media = undefined;
  }

  async setBootDevice(target: BootTarget, mode: BootMode): Promise<void> {
    this.record(`setBootDevice ${target} ${mode}`);
    this.m.boot = { target, mode };
  }
}
