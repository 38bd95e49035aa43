import net from 'node:net';
import { ipVersion } from '../../src/domain/ip-address';

/** src/domain cannot import node:net (the purity lint); its own reading must give node's answers. */
describe('ipVersion reads addresses as net.isIP does', () => {
  it.each([
    '0.0.0.0', '255.255.255.255', '256.1.1.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.4 ', ' 1.2.3.4', '1..2.3', '',
    '::', '::1', '1::', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7::', '::2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8::',
    '1::2::3', ':1:2::3', '1::2:', 'fe80::1%eth0', 'fe80::1%', 'fe80::1%a%b', '::ffff:1.2.3.4', '::1.2.3.4', '1:2:3:4:5:6:1.2.3.4',
    '1:2:3:4:5:6:7:1.2.3.4', '::ffff:01.2.3.4', '12345::1', 'g::1', 'ABCD:ef01::', '1.2.3.4%eth0', '::1.2.3', '1.2.3.4::',
  ])('%j', (s) => {
    expect(ipVersion(s)).toBe(net.isIP(s));
  });

  it('agrees on 200,000 generated strings, near-addresses and noise', () => {
    const alphabet = '0123456789abcdefABg:.%:::..-';
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
    const octet = () => pick(['0', '1', '9', '25', '99', '199', '255', '256', '01', '999', '', 'a']);
    const quad = () => Array.from({ length: 3 + rand(3) }, octet).join('.');
    const group = () => pick(['0', '1', 'ff', 'FFFF', 'abcd', '12345', 'g', '', '0000']);
    const v6text = () => {
      const groups = Array.from({ length: 1 + rand(9) }, group);
      if (rand(3) === 0) groups.splice(rand(groups.length + 1), 0, '');
      let s = groups.join(':');
      if (rand(4) === 0) s += `:${quad()}`;
      if (rand(6) === 0) s += pick(['%eth0', '%', '%a.b-c:1', '%/']);
      return s;
    };
    const noise = () => Array.from({ length: 1 + rand(24) }, () => alphabet[rand(alphabet.length)]).join('');
    const disagreements: string[] = [];
    let v4 = 0;
    let v6 = 0;
    for (let i = 0; i < 200_000; i++) {
      const s = pick([quad, v6text, noise])();
      const want = net.isIP(s);
      if (want === 4) v4++;
      if (want === 6) v6++;
      if (ipVersion(s) !== want) disagreements.push(s);
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
    // The corpus reaches both kinds of valid address, or agreeing on it would prove little.
    expect(v4).toBeGreaterThan(1000);
    expect(v6).toBeGreaterThan(500);
  });
});
