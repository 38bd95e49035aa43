/**
 * What Landfall asks of a host's BMC, whatever speaks to it. Two executors:
 * RedfishDriver (src/bmc/redfish.ts) talks to a real BMC, or to an emulator
 * such as sushy-tools, over Redfish; SimulatedBmcDriver (src/bmc/simulated.ts)
 * is a simulation for the simulated demo fleet and changes nothing anywhere.
 */
import type { BmcAddress } from './address';

export type PowerState = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff' | 'Paused' | 'Unknown';
export type ResetType = 'On' | 'ForceOff' | 'GracefulShutdown' | 'GracefulRestart' | 'ForceRestart';
export type BootTarget = 'Cd' | 'Hdd' | 'Pxe';
export type BootMode = 'Once' | 'Continuous';

export interface BmcCredentials {
  username: string;
  password: string;
}

export interface BmcSystem {
  /** The ComputerSystem's path on the BMC. */
  path: string;
  /** SMBIOS system UUID as the BMC reports it (lower case); what an agent registers as its host id. */
  uuid?: string;
  powerState: PowerState;
  bootTarget?: string;
  bootMode?: string;
  manufacturer?: string;
  model?: string;
}

export interface VirtualMediaState {
  /** Where the CD device lives on the BMC (under the System or a Manager). */
  path: string;
  inserted: boolean;
  image?: string;
}

export interface BmcDriver {
  readonly kind: 'redfish' | 'simulated';
  /** The address, safe to show (no credentials). */
  readonly address: string;
  system(): Promise<BmcSystem>;
  powerState(): Promise<PowerState>;
  reset(type: ResetType): Promise<void>;
  virtualMedia(): Promise<VirtualMediaState>;
  insertMedia(imageUrl: string): Promise<void>;
  ejectMedia(): Promise<void>;
  setBootDevice(target: BootTarget, mode: BootMode): Promise<void>;
}

/**
 * A BMC call that failed. The message names the BMC (its address), the call
 * (method and path) and what the BMC answered (status and its message); the
 * password is never part of it, even when a BMC echoes it back.
 */
export class BmcError extends Error {
  constructor(
    message: string,
    readonly details: { address: string; method?: string; path?: string; status?: number; answer?: string; transient: boolean },
  ) {
    super(message);
    this.name = 'BmcError';
  }
}

export interface BmcTarget {
  address: BmcAddress;
  credentials: BmcCredentials;
  /** Accept a self-signed certificate (most BMCs ship one). */
  insecure?: boolean;
}

export type BmcDriverFactory = (target: BmcTarget) => BmcDriver;
