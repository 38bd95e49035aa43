/**
 * What commands print: a JSON document (`-o json`, the API objects as they
 * came, for scripts) or an aligned table for people. Progress and messages for
 * people go to stderr when stdout carries JSON, so `-o json | jq` keeps working.
 */
import { Option, type Command } from 'commander';
import { ApiClient } from './api-client';
import { CliError } from './exit-codes';

export type OutputFormat = 'table' | 'json';

export interface ClientFlags {
  url: string;
  token?: string;
  output: OutputFormat;
}

export const DEFAULT_URL = 'http://127.0.0.1:8090';

/** --url, --token and --output, on every command that talks to the API. */
export function withClientOptions(cmd: Command, opts: { output?: boolean } = { output: true }): Command {
  cmd.addOption(new Option('--url <url>', 'Landfall API base URL').env('LANDFALL_URL').default(DEFAULT_URL));
  cmd.addOption(new Option('--token <token>', 'bearer token for AUTH_TYPE=local (see `landfall token user`)').env('LANDFALL_TOKEN'));
  if (opts.output !== false) cmd.addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table'));
  return cmd;
}

export function clientOf(flags: ClientFlags): ApiClient {
  return new ApiClient({ url: flags.url, token: flags.token || undefined });
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(headers: string[], rows: Array<Array<string | number | undefined>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === undefined || c === null ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n') + '\n';
}

export function printTable(headers: string[], rows: Array<Array<string | number | undefined>>): void {
  process.stdout.write(table(headers, rows));
}

/** Key: value lines for one object. */
export function printFields(fields: Array<[string, string | number | undefined]>): void {
  const w = Math.max(...fields.map(([k]) => k.length));
  process.stdout.write(fields.map(([k, v]) => `${(k + ':').padEnd(w + 1)} ${v === undefined || v === '' ? '-' : v}`).join('\n') + '\n');
}

export function bytes(n: number | undefined): string | undefined {
  if (n === undefined || !Number.isFinite(n)) return undefined;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

export function duration(seconds: number | undefined | null): string | undefined {
  if (seconds === undefined || seconds === null || !Number.isFinite(seconds)) return undefined;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * A time field of an API object, or undefined while it has not happened: the
 * API sends AS's zero time (year 1) for those, as AS does.
 */
export function setTime(at: unknown): string | undefined {
  return typeof at === 'string' && at !== '' && !at.startsWith('0001-01-01') ? at : undefined;
}

/** HH:MM:SS of an ISO time, in UTC (the service's clock, and what logs use). */
export function clock(at: string | undefined): string {
  if (!at) return '--:--:--';
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? at : d.toISOString().slice(11, 19);
}

export function positiveInt(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new CliError('usage', `${name} takes a positive whole number (got "${v}")`);
    return n;
  };
}
