import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ENV_NAMES } from '../../src/config';

describe('README', () => {
  const readme = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');
  it('documents every configuration variable in its table', () => {
    const documented = [...readme.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect([...ENV_NAMES].sort()).toEqual([...new Set(documented)].sort());
  });
});
