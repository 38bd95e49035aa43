/**
 * A benchmark's command line is checked before it starts (bench/support.ts
 * checkOptions): a mistyped option used to run minutes with the defaults
 * and print figures for a run nobody asked for.
 */
import { optionProblem, type OptionSpec } from '../../bench/support';

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
