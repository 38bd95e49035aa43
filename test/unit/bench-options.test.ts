/**
 * A benchmark's command line is checked before it starts (bench/support.ts
 * checkOptions): a mistyped option used to run minutes with the defaults
 * and print figures for a run nobody asked for.
 */
import { boundedNumber, keyValue, optionProblem, type OptionSpec } from '../../bench/support';

const spec: OptionSpec = { numbers: ['rounds', 'clusters'], strings: ['rates'], switches: ['cold'] };

test('the options a benchmark reads pass, in any order', () => {
  expect(optionProblem([], spec)).toBeUndefined();
  expect(optionProblem(['--rounds', '200', '--cold', '--rates', '800,1500', '--clusters', '20'], spec)).toBeUndefined();
  expect(optionProblem(['--cold', '--rounds', '0.5'], spec)).toBeUndefined();
});

test('an option it does not read is named', () => {
  expect(optionProblem(['--round', '200'], spec)).toBe('unknown option --round');
  expect(optionProblem(['--rounds', '200', '--colder'], spec)).toBe('unknown option --colder');
});

test('a number option needs a number', () => {
  expect(optionProblem(['--rounds'], spec)).toBe('--rounds takes a number');
  expect(optionProblem(['--rounds', 'many'], spec)).toBe('--rounds takes a number, not "many"');
  expect(optionProblem(['--rounds', '--cold'], spec)).toBe('--rounds takes a number, not "--cold"');
  expect(optionProblem(['--rounds', ''], spec)).toBe('--rounds takes a number, not ""');
});

test('a text option needs its text, and a stray word is no option', () => {
  expect(optionProblem(['--rates'], spec)).toBe('--rates takes a value');
  expect(optionProblem(['--rates', '--cold'], spec)).toBe('--rates takes a value');
  expect(optionProblem(['200'], spec)).toBe('unexpected argument "200"');
  expect(optionProblem(['--cold', 'yes'], spec)).toBe('unexpected argument "yes"');
});

test('a bounded number option: within its bounds, whole when asked, and its usage after the error', () => {
  expect(boundedNumber('--hosts', '5000', 1, 100_000, { whole: true })).toBe(5000);
  expect(boundedNumber('--post-ratio', '0.25', 0, 1)).toBe(0.25);
  expect(() => boundedNumber('--hosts', '2.5', 1, 100_000, { whole: true })).toThrow('--hosts must be a whole number in [1, 100000] (got 2.5)');
  expect(() => boundedNumber('--post-ratio', '1.5', 0, 1)).toThrow('--post-ratio must be a number in [0, 1] (got 1.5)');
  // Missing or empty is not zero (Number('') is 0).
  expect(() => boundedNumber('--minutes', undefined, 0, 60)).toThrow('(got nothing)');
  expect(() => boundedNumber('--minutes', '', 0, 60)).toThrow('--minutes must be a number');
  expect(() => boundedNumber('--hosts', 'many', 1, 10, { whole: true, usage: 'usage: bench --hosts N' })).toThrow(/\(got many\)\nusage: bench --hosts N$/);
});

test('a K=V option splits at its first = and refuses a missing name or value', () => {
  expect(keyValue('--api-env', 'NODE_OPTIONS=--max-old-space-size=4096')).toEqual(['NODE_OPTIONS', '--max-old-space-size=4096']);
  expect(keyValue('--pg-conf', 'work_mem=')).toEqual(['work_mem', '']);
  expect(() => keyValue('--api-env', 'FOO')).toThrow('--api-env takes K=V (got FOO)');
  expect(() => keyValue('--pg-conf', '=x')).toThrow('--pg-conf takes K=V (got =x)');
  expect(() => keyValue('--api-env', undefined, 'usage: …')).toThrow(/takes K=V \(got nothing\)\nusage: …/);
});
