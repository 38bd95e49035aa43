import { staticNetworkKeyfiles, StaticNetworkError } from '../../src/domain/static-network';

const yaml = `interfaces:
  - name: eth0
    type: ethernet
    state: up
    mtu: 9000
    ipv4:
      enabled: true
      dhcp: false
      address:
        - ip: 192.168.10.21
          prefix-length: 24
    ipv6:
      enabled: false
dns-resolver:
  config:
    server: [192.168.10.1, 2001:db8::1]
routes:
  config:
    - destination: 0.0.0.0/0
      next-hop-address: 192.168.10.1
      next-hop-interface: eth0
    - destination: 10.50.0.0/16
      next-hop-address: 192.168.10.254
      next-hop-interface: eth0
`;

describe('static network → NetworkManager keyfiles', () => {
  it('renders a MAC-matched profile with addresses, gateway, routes, DNS and MTU', () => {
    const [k] = staticNetworkKeyfiles([{ network_yaml: yaml, mac_interface_map: [{ mac_address: '52:54:00:AA:BB:CC', logical_nic_name: 'eth0' }] }]);
    expect(k!.name).toBe('landfall-525400aabbcc.nmconnection');
    expect(k!.contents).toContain('[ethernet]\nmac-address=52:54:00:aa:bb:cc\nmtu=9000');
    expect(k!.contents).toContain('[ipv4]\nmethod=manual\naddress1=192.168.10.21/24\ngateway=192.168.10.1\nroute2=10.50.0.0/16,192.168.10.254\ndns=192.168.10.1;');
    expect(k!.contents).toContain('[ipv6]\nmethod=disabled');
    expect(k!.contents).not.toContain('interface-name');
  });

  it('gives every host its own profiles, matched by MAC', () => {
    const other = yaml.replace('192.168.10.21', '192.168.10.22');
    const files = staticNetworkKeyfiles([
      { network_yaml: yaml, mac_interface_map: [{ mac_address: '52:54:00:00:00:01', logical_nic_name: 'eth0' }] },
      { network_yaml: other, mac_interface_map: [{ mac_address: '52:54:00:00:00:02', logical_nic_name: 'eth0' }] },
    ]);
    expect(files.map((f) => f.name)).toEqual(['landfall-525400000001.nmconnection', 'landfall-525400000002.nmconnection']);
    expect(files[1]!.contents).toContain('address1=192.168.10.22/24');
  });

  it.each([
    [{ network_yaml: 'interfaces: [', mac_interface_map: [] }, /not YAML/],
    [{ network_yaml: yaml, mac_interface_map: [] }, /eth0 has no entry in mac_interface_map/],
    [{ network_yaml: yaml, mac_interface_map: [{ mac_address: 'zz', logical_nic_name: 'eth0' }] }, /not a MAC address/],
    [{ network_yaml: yaml.replace('192.168.10.21', '300.1.1.1'), mac_interface_map: [{ mac_address: '52:54:00:00:00:01', logical_nic_name: 'eth0' }] }, /not an IP address/],
    [{ network_yaml: yaml.replace('type: ethernet', 'type: bond'), mac_interface_map: [{ mac_address: '52:54:00:00:00:01', logical_nic_name: 'eth0' }] }, /only ethernet/],
  ])('rejects %#', (host, message) => {
    expect(() => staticNetworkKeyfiles([host])).toThrow(StaticNetworkError);
    expect(() => staticNetworkKeyfiles([host])).toThrow(message);
  });
});
