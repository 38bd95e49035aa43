import { applyKernelArguments, checkKernelArguments, splitKargs } from '../../src/domain/kernel-arguments';
import { ImageUrlSigner } from '../../src/auth/image-url-signer';

describe('kernel arguments', () => {
  const defaults = 'mitigations=auto,nosmt coreos.liveiso=x ignition.firstboot console=tty0 console=ttyS0';

  it('appends, deletes by key or by exact value, and replaces in place', () => {
    expect(applyKernelArguments(defaults, [{ operation: 'append', value: 'a=1' }])).toBe(`${defaults} a=1`);
    expect(applyKernelArguments(defaults, [{ operation: 'delete', value: 'console' }])).toBe('mitigations=auto,nosmt coreos.liveiso=x ignition.firstboot');
    expect(applyKernelArguments(defaults, [{ operation: 'delete', value: 'console=ttyS0' }])).toBe('mitigations=auto,nosmt coreos.liveiso=x ignition.firstboot console=tty0');
    // Replace keeps the first position and drops the other arguments with that key.
    expect(applyKernelArguments(defaults, [{ operation: 'replace', value: 'console=ttyS1,115200' }])).toBe('mitigations=auto,nosmt coreos.liveiso=x ignition.firstboot console=ttyS1,115200');
    expect(applyKernelArguments('a', [{ operation: 'replace', value: 'b=2' }])).toBe('a b=2');
    expect(applyKernelArguments(defaults, undefined)).toBe(defaults);
  });

  it('keeps quoted values whole', () => {
    expect(splitKargs('a="b c" d')).toEqual(['a="b c"', 'd']);
    expect(applyKernelArguments('a="b c" d', [{ operation: 'delete', value: 'd' }])).toBe('a="b c"');
  });

  it("refuses arguments the discovery image depends on, and replace without a value", () => {
    expect(() => checkKernelArguments([{ operation: 'append', value: 'ok=1' }, { operation: 'delete', value: 'coreos.live.rootfs_url' }])).toThrow(/kernel_arguments\[1\]: coreos\.live\.rootfs_url is set by Landfall/);
    expect(() => checkKernelArguments([{ operation: 'replace', value: 'quiet' }])).toThrow(/replace needs key=value/);
  });
});

describe('presigned image URL tokens', () => {
  const signer = new ImageUrlSigner(Buffer.alloc(32, 1));
  const claims = { infraEnvId: 'a', version: 3, expiresAt: 2_000_000_000 };

  it('verify what they signed, for that infra-env, version and expiry only', () => {
    const t = signer.sign(claims);
    expect(t.length).toBeLessThan(40);
    expect(signer.verify(t, 'a', 1_000_000_000_000)).toEqual(claims);
    expect(signer.verify(t, 'b', 1_000_000_000_000)).toBeUndefined();
    expect(signer.verify(t, 'a', 2_000_000_000_000)).toBeUndefined();
    const [exp, , mac] = t.split('.');
    expect(signer.verify(`${exp}.4.${mac}`, 'a', 0)).toBeUndefined();
    expect(new ImageUrlSigner(Buffer.alloc(32, 2)).verify(t, 'a', 0)).toBeUndefined();
    expect(signer.verify('', 'a', 0)).toBeUndefined();
  });

  it('refuse keys shorter than 32 bytes', () => {
    expect(() => new ImageUrlSigner(Buffer.alloc(16))).toThrow(/at least 32 bytes/);
  });
});
