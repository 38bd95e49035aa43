import type { StorageConfig } from '../config';
import { LocalObjectStore } from './local-object-store';
import { S3ObjectStore } from './s3-object-store';
import type { ObjectStore } from './object-store';

export type { ObjectStore, ObjectInfo } from './object-store';

export function createObjectStore(cfg: StorageConfig): ObjectStore {
  return cfg.backend === 's3' ? new S3ObjectStore(cfg) : new LocalObjectStore(cfg.dir);
}
