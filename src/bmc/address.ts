/**
 * BMC addresses as Metal3's BareMetalHost spells them
 * (`redfish+http://10.0.0.1:8000/redfish/v1/Systems/1`), parsed once at the
 * API's edge. Credentials never travel in the address: a URL with a user or
 * password in it is refused, so an address can be logged and shown as is.
 */

export type BmcKind = 'redfish' | 'simulated';

export interface BmcAddress {
  kind: BmcKind;
  /** What the user gave, normalised (lower-case scheme); safe to show and log. */
  address: string;
  /** scheme://host[:port] the driver talks to (redfish), or the simulated machine's name. */
  endpoint: string;
  /** The ComputerSystem path, when the address names one; else the BMC's only system is used. */
  systemPath?: string;
  /** redfish-virtualmedia: boot from virtual media is what the address asks for (Landfall always boots that way). */
  virtualMedia: boolean;
}

export class BmcAddressError extends Error {}

const REDFISH_SCHEMES: Record<string, { transport: 'http' | 'https'; virtualMedia: boolean }> = {
  redfish: { transport: 'https', virtualMedia: false },
  'redfish+http': { transport: 'http', virtualMedia: false },
  'redfish+https': { transport: 'https', virtualMedia: false },
  'redfish-virtualmedia': { transport: 'https', virtualMedia: true },
  'redfish-virtualmedia+http': { transport: 'http', virtualMedia: true },
  'redfish-virtualmedia+https': { transport: 'https', virtualMedia: true },
};

export const BMC_SCHEMES = [...Object.keys(REDFISH_SCHEMES), 'simulated'] as const;

export function parseBmcAddress(raw: string): BmcAddress {
  const m = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(raw.trim());
  if (!m) throw new BmcAddressError(`bmc_address ${JSON.stringify(raw)} is not a URL such as redfish+http://10.0.0.1:8000/redfish/v1/Systems/1`);
  const scheme = m[1]!.toLowerCase();
  if (scheme === 'simulated') {
    const name = m[2]!;
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name)) throw new BmcAddressError('a simulated:// BMC address names the simulated machine: letters, digits, ".", "_" and "-"');
    return { kind: 'simulated', address: `simulated://${name}`, endpoint: name, virtualMedia: true };
  }
  const s = REDFISH_SCHEMES[scheme];
  if (!s) throw new BmcAddressError(`bmc_address scheme ${scheme} is not supported; use one of ${BMC_SCHEMES.join(', ')}`);
  let u: URL;
  try {
    u = new URL(`${s.transport}://${m[2]}`);
  } catch {
    throw new BmcAddressError(`bmc_address ${JSON.stringify(raw)} is not a valid URL`);
  }
  if (u.username || u.password) throw new BmcAddressError('bmc_address must not carry a user or password; give them in bmc_credentials');
  if (u.search || u.hash) throw new BmcAddressError('bmc_address must not have a query or fragment');
  const path = u.pathname.replace(/\/+$/, '');
  let systemPath: string | undefined;
  if (path !== '' && path !== '/redfish/v1' && path !== '/redfish/v1/Systems') {
    if (!/^\/redfish\/v1\/Systems\/[^/]+$/.test(path)) throw new BmcAddressError(`bmc_address path ${path} is not a Redfish system (/redfish/v1/Systems/<id>)`);
    systemPath = path;
  }
  const endpoint = `${u.protocol}//${u.host}`;
  return { kind: 'redfish', address: `${scheme}://${u.host}${systemPath ?? ''}`, endpoint, systemPath, virtualMedia: s.virtualMedia };
}

/** aa:bb:cc:dd:ee:ff in lower case, or an error naming the field. */
export function normaliseMac(raw: string): string {
  const v = raw.trim().toLowerCase().replace(/-/g, ':');
  if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(v)) throw new BmcAddressError(`boot_mac_address ${JSON.stringify(raw)} is not a MAC address such as 52:54:00:12:34:56`);
  return v;
}
