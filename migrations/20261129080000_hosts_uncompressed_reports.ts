import type { Knex } from 'knex';

/**
 * The host's large columns (`inventory`, the agent's report as text, and
 * `doc`, whose validations every refresh rewrites) stored out of line and
 * uncompressed (EXTERNAL) instead of compressed (EXTENDED, the default).
 *
 * Why: this PostgreSQL build has only pglz, and at fleet scale every
 * inventory reply and every refresh that writes a host compresses kilobytes
 * again, and every refresh that reads one decompresses them: in a perf
 * profile of bench/agent-api (5,000 hosts, 1,700 req/s) pglz was 14 % of
 * PostgreSQL's CPU. With EXTERNAL, PostgreSQL used 0.355–0.361 ms per
 * request against 0.412–0.418 (bench/README.md, 2026-11-29, third session).
 * The cost is disk: an inventory takes its full ~11 KB in the TOAST table
 * instead of ~3.3 KB.
 *
 * Only values written from now on are stored this way (no table rewrite):
 * each host's columns change storage when next written, which an active
 * fleet does within minutes. Both ways read the same.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table hosts alter column inventory set storage external, alter column doc set storage external');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table hosts alter column inventory set storage extended, alter column doc set storage extended');
}
