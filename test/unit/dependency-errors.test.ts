/**
 * Which errors mean a dependency is away (answered 503 with Retry-After) and
 * which are bugs (500): the drivers' own error shapes, as they raise them.
 */
import { Client } from 'pg';
import { Connection } from '@temporalio/client';
import { unavailableDependency } from '../../src/api/dependency-errors';
import { freePort } from '../../src/dev/process-utils';

describe('unavailableDependency', () => {
  it('names PostgreSQL for a refused connection, a server going away, a pool timeout', async () => {
    const port = await freePort();
    const refused = await new Client({ connectionString: `postgres://x:y@127.0.0.1:${port}/db` }).connect().then(() => undefined, (e: unknown) => e);
    expect(unavailableDependency(refused)).toBe('a dependency');
    // Through a Unix socket (the embedded server's local clients): a stopped server's socket file is gone.
    const gone = await new Client({ connectionString: `postgres://x:y@localhost/db?host=${encodeURIComponent('/nonexistent-landfall-socket-dir')}&port=${port}` }).connect().then(() => undefined, (e: unknown) => e);
    expect((gone as { code?: string }).code).toBe('ENOENT');
    expect(unavailableDependency(gone)).toBe('a dependency');
    expect(unavailableDependency(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' }))).toBe('postgresql');
    expect(unavailableDependency(Object.assign(new Error('the database system is starting up'), { code: '57P03', severity: 'FATAL' }))).toBe('postgresql');
    expect(unavailableDependency(new Error('Connection terminated unexpectedly'))).toBe('postgresql');
    // pg's connect timeout (seen 39 times in a chaos run while PostgreSQL restarted).
    expect(unavailableDependency(new Error('timeout expired'))).toBe('postgresql');
    expect(unavailableDependency(Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' }))).toBe('postgresql');
  });

  it('names Temporal when its client cannot reach the server', async () => {
    const port = await freePort();
    const err = await Connection.connect({ address: `127.0.0.1:${port}`, connectTimeout: 500 }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeDefined();
    expect(unavailableDependency(err)).toBe('temporal');
    const wrapped = Object.assign(new Error('Failed to signal workflow'), { name: 'ServiceError', cause: Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }) });
    expect(unavailableDependency(wrapped)).toBe('temporal');
  });

  it('leaves bugs and bad input alone', () => {
    // A missing file is not a dependency away, unless it is a socket that connect() could not find.
    expect(unavailableDependency(Object.assign(new Error('ENOENT: no such file or directory, open \'/x\''), { code: 'ENOENT', syscall: 'open' }))).toBeUndefined();
    expect(unavailableDependency(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBeUndefined();
    // A constraint violation or a syntax error is PostgreSQL answering, not PostgreSQL away.
    expect(unavailableDependency(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505', severity: 'ERROR' }))).toBeUndefined();
    expect(unavailableDependency(Object.assign(new Error('syntax error'), { code: '42601', severity: 'ERROR' }))).toBeUndefined();
    expect(unavailableDependency(undefined)).toBeUndefined();
  });
});
