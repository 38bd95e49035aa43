/**
 * A realistic discovery-agent inventory (the shape assisted-service's agent
 * posts as the output of the `inventory` step): a dual-socket server with
 * NVMe and SATA disks carrying SMART data, bonded NICs, a BMC, IPv4 and IPv6
 * routes and the full x86-64 CPU flag list. About 10 KB of JSON, like the
 * inventories of real bare-metal hosts.
 */

const CPU_FLAGS = (
  'fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb ' +
  'rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl ' +
  'vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm ' +
  'abm 3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept ' +
  'vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm mpx rdt_a avx512f avx512dq rdseed adx smap clflushopt clwb intel_pt ' +
  'avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local dtherm ida arat pln pts hwp ' +
  'hwp_act_window hwp_epp hwp_pkg_req pku ospke avx512_vnni md_clear flush_l1d arch_capabilities'
).split(' ');

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/** A deterministic pseudo-random stream, so every run posts the same bytes for the same seed. */
function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}

function smart(rand: () => number, model: string, serial: string, nvme: boolean): string {
  // The agent embeds smartctl's JSON as a string; it is most of a disk's bytes.
  const attrs = nvme
    ? {
        critical_warning: 0,
        temperature: 30 + Math.floor(rand() * 15),
        available_spare: 100,
        available_spare_threshold: 10,
        percentage_used: Math.floor(rand() * 5),
        data_units_read: Math.floor(rand() * 1e8),
        data_units_written: Math.floor(rand() * 1e8),
        host_reads: Math.floor(rand() * 1e9),
        host_writes: Math.floor(rand() * 1e9),
        power_cycles: Math.floor(rand() * 200),
        power_on_hours: Math.floor(rand() * 20000),
        unsafe_shutdowns: Math.floor(rand() * 30),
        media_errors: 0,
      }
    : {
        table: [
          { id: 1, name: 'Raw_Read_Error_Rate', value: 200, worst: 200, thresh: 51, raw: { value: 0 } },
          { id: 5, name: 'Reallocated_Sector_Ct', value: 100, worst: 100, thresh: 10, raw: { value: 0 } },
          { id: 9, name: 'Power_On_Hours', value: 90, worst: 90, thresh: 0, raw: { value: Math.floor(rand() * 30000) } },
          { id: 12, name: 'Power_Cycle_Count', value: 100, worst: 100, thresh: 0, raw: { value: Math.floor(rand() * 200) } },
          { id: 194, name: 'Temperature_Celsius', value: 112, worst: 100, thresh: 0, raw: { value: 30 + Math.floor(rand() * 15) } },
          { id: 197, name: 'Current_Pending_Sector', value: 200, worst: 200, thresh: 0, raw: { value: 0 } },
        ],
      };
  return JSON.stringify({
    json_format_version: [1, 0],
    smartctl: { version: [7, 2], svn_revision: '5155', platform_info: 'x86_64-linux-5.14.0', build_info: '(local build)', exit_status: 0 },
    device: { name: nvme ? '/dev/nvme0' : '/dev/sda', info_name: nvme ? '/dev/nvme0' : '/dev/sda [SAT]', type: nvme ? 'nvme' : 'sat', protocol: nvme ? 'NVMe' : 'ATA' },
    model_name: model,
    serial_number: serial,
    smart_status: { passed: true },
    [nvme ? 'nvme_smart_health_information_log' : 'ata_smart_attributes']: attrs,
  });
}

export function inventoryFor(hostname: string, index: number): string {
  const rand = prng(index + 1);
  const mac = (nic: number) => `b8:ce:f6:${hex((index >> 8) & 0xff, 2)}:${hex(index & 0xff, 2)}:${hex(nic, 2)}`;
  const ip4 = `10.${20 + ((index >> 16) & 0xff)}.${(index >> 8) & 0xff}.${index & 0xff}`;
  const ip6 = `fd00:10:20::${hex(index & 0xffff, 1)}`;
  const disk = (n: number, nvme: boolean, sizeBytes: number) => {
    const model = nvme ? 'SAMSUNG MZQL23T8HCLS-00A07' : 'ST4000NM000A-2HZ100';
    const serial = `S${hex(Math.floor(rand() * 0xffffffff), 8).toUpperCase()}`;
    const name = nvme ? `nvme${n}n1` : `sd${String.fromCharCode(97 + n)}`;
    const wwn = `eui.${hex(Math.floor(rand() * 0xffffffff), 8)}${hex(Math.floor(rand() * 0xffffffff), 8)}`;
    return {
      id: `/dev/disk/by-id/${nvme ? 'nvme' : 'wwn'}-${wwn}`,
      by_id: `/dev/disk/by-id/${nvme ? 'nvme' : 'wwn'}-${wwn}`,
      by_path: nvme ? `/dev/disk/by-path/pci-0000:${hex(0x5e + n, 2)}:00.0-nvme-1` : `/dev/disk/by-path/pci-0000:00:17.0-ata-${n + 1}`,
      drive_type: nvme ? 'SSD' : 'HDD',
      hctl: nvme ? '' : `${n}:0:0:0`,
      model,
      name,
      path: `/dev/${name}`,
      serial,
      size_bytes: sizeBytes,
      vendor: nvme ? 'Samsung' : 'ATA',
      wwn,
      bootable: n === 0,
      removable: false,
      is_installation_media: false,
      has_uuid: false,
      holders: '',
      installation_eligibility: { eligible: true, not_eligible_reasons: [] },
      io_perf: {},
      smart: smart(rand, model, serial, nvme),
    };
  };
  const nic = (name: string, n: number, extra: Record<string, unknown>) => ({
    name,
    mac_address: mac(n),
    biosdevname: `p1p${n + 1}`,
    client_id: '',
    flags: ['up', 'broadcast', 'multicast'],
    has_carrier: true,
    ipv4_addresses: [] as string[],
    ipv6_addresses: [] as string[],
    mtu: 9000,
    product: '0x1593',
    vendor: '0x8086',
    speed_mbps: 25000,
    type: 'physical',
    ...extra,
  });
  return JSON.stringify({
    hostname,
    bmc_address: `10.99.${(index >> 8) & 0xff}.${index & 0xff}`,
    bmc_v6address: '::/0',
    boot: { current_boot_mode: 'uefi', pxe_interface: mac(0), secure_boot_state: 'disabled' },
    cpu: { architecture: 'x86_64', count: 64, flags: CPU_FLAGS, frequency: 3400, model_name: 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz' },
    memory: { physical_bytes: 512 * 1024 ** 3, usable_bytes: 503 * 1024 ** 3, physical_bytes_method: 'dmidecode' },
    disks: [disk(0, true, 3840755982336), disk(1, true, 3840755982336), disk(0, false, 4000787030016), disk(1, false, 4000787030016)],
    interfaces: [
      nic('ens1f0', 0, { ipv4_addresses: [`${ip4}/16`], ipv6_addresses: [`${ip6}/64`] }),
      nic('ens1f1', 1, {}),
      nic('ens2f0', 2, { has_carrier: false, speed_mbps: -1 }),
      nic('ens2f1', 3, { has_carrier: false, speed_mbps: -1 }),
    ],
    routes: [
      { interface: 'ens1f0', destination: '0.0.0.0', gateway: `10.${20 + ((index >> 16) & 0xff)}.0.1`, family: 2, metric: 100 },
      { interface: 'ens1f0', destination: `10.${20 + ((index >> 16) & 0xff)}.0.0`, gateway: '0.0.0.0', family: 2, metric: 100 },
      { interface: 'ens1f0', destination: '::', gateway: 'fd00:10:20::1', family: 10, metric: 1024 },
      { interface: 'ens1f0', destination: 'fd00:10:20::', gateway: '::', family: 10, metric: 100 },
      { interface: 'ens1f0', destination: 'fe80::', gateway: '::', family: 10, metric: 256 },
    ],
    gpus: [],
    system_vendor: { manufacturer: 'Dell Inc.', product_name: 'PowerEdge R650', serial_number: `SN${hex(index, 6).toUpperCase()}`, virtual: false },
    tpm_version: '2.0',
    timestamp: 1763700000 + index,
  });
}
