/**
 * What Landfall does with a BMC, as sequences of driver calls. Each is safe to
 * run again after a failure part-way (an activity retry): it reads before it
 * changes, and every step leaves the machine in a state the next run accepts.
 */
import type { BmcDriver, PowerState } from './driver';

export interface BootResult {
  /** Power state before Landfall acted. */
  before: PowerState;
  /** The reset Landfall sent. */
  reset: 'On' | 'ForceRestart';
}

/**
 * Boot the discovery ISO once: insert it as virtual CD, override the next
 * boot to Cd (Once: the machine's own boot order, disk first, applies after
 * that boot), then power on, or restart a machine that is already on.
 */
export async function bootFromIso(d: BmcDriver, isoUrl: string): Promise<BootResult> {
  await d.insertMedia(isoUrl);
  await d.setBootDevice('Cd', 'Once');
  const before = await d.powerState();
  const reset = before === 'On' || before === 'PoweringOn' ? 'ForceRestart' : 'On';
  await d.reset(reset);
  return { before, reset };
}

/**
 * After the image is on the disk: the disk becomes the boot device for good
 * (Continuous) and the ISO leaves the drive, so no later boot finds it.
 */
export async function bootFromDiskNext(d: BmcDriver): Promise<{ ejected: boolean }> {
  await d.setBootDevice('Hdd', 'Continuous');
  const vm = await d.virtualMedia();
  if (vm.inserted || vm.image) await d.ejectMedia();
  return { ejected: Boolean(vm.inserted || vm.image) };
}
