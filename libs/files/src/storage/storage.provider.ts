import type { Provider } from '@nestjs/common';
import { AppConfig, type StorageSettings } from '#libs/config';
import { FILE_STORAGE, type FileStorage } from './file-storage.js';
import { LocalFileStorage } from './local-storage.js';
import { S3FileStorage } from './s3-storage.js';

export function createFileStorage(settings: StorageSettings): FileStorage {
  return settings.driver === 'local' ? new LocalFileStorage(settings.dir) : new S3FileStorage(settings);
}

/** The process's one FileStorage, chosen by STORAGE_DRIVER. */
export const fileStorageProvider: Provider = {
  provide: FILE_STORAGE,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => createFileStorage(config.storage),
};
