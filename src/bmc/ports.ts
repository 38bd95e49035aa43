/** What BMC use-cases and activities need, built once per process from configuration. */
import type { Knex } from 'knex';
import { createBmcRepo, type BmcRepo } from './bmc-repo';
import { CredentialsBox, loadCredentialsKey } from './credentials';
import type { BmcDriverFactory } from './driver';
import { defaultBmcDrivers } from './drivers';

export interface BmcPorts {
  repo: BmcRepo;
  /** Seals and opens credentials; its key may live in the database, hence a promise. */
  box: () => Promise<CredentialsBox>;
  drivers: BmcDriverFactory;
  /**
   * Where BMCs fetch the discovery ISO from (BMC_IMAGE_BASE_URL): a BMC often
   * sits on a management network that reaches the service at another
   * address than the hosts do. Defaults to SERVICE_BASE_URL.
   */
  imageBaseUrl: string;
}

export function createBmcPorts(db: Knex, opts: { key: Buffer | undefined; imageBaseUrl: string; drivers?: BmcDriverFactory }): BmcPorts {
  let box: Promise<CredentialsBox> | undefined;
  return {
    repo: createBmcRepo(db),
    box: () =>
      (box ??= loadCredentialsKey(db, opts.key).then(
        (k) => new CredentialsBox(k),
        (err: unknown) => {
          // Not kept: the next call tries the database again.
          box = undefined;
          throw err;
        },
      )),
    drivers: opts.drivers ?? defaultBmcDrivers,
    imageBaseUrl: opts.imageBaseUrl.replace(/\/+$/, ''),
  };
}
