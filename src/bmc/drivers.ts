/** The driver for an address: Redfish for redfish* schemes, the simulation for simulated://. */
import type { BmcDriver, BmcDriverFactory, BmcTarget } from './driver';
import { RedfishDriver } from './redfish';
import { SimulatedBmcDriver } from './simulated';

export const defaultBmcDrivers: BmcDriverFactory = (t: BmcTarget): BmcDriver =>
  t.address.kind === 'simulated' ? new SimulatedBmcDriver(t.address.endpoint) : new RedfishDriver(t);
