import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { OnApplicationShutdown } from '@nestjs/common';
import { ArtifactStorage, StoredArtifact } from './artifact-storage';
import { FileWriterThread } from './file-writer-thread';

const CONTENT_TYPES: Record<string, string> = {
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.json': 'application/json',
};

/**
 * Stores artifacts as files under one directory. Writes go to a temporary
 * file first and are renamed into place, so a reader never sees half a file;
 * they are done on a thread of their own (FileWriterThread), folders made as
 * needed.
 */
export class LocalArtifactStorage implements ArtifactStorage, OnApplicationShutdown {
  private readonly root: string;
  private readonly writer = new FileWriterThread();
  /** Makes each temporary name unique within the process, even for two writes of one key at once. */
  private writes = 0;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(key: string, body: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await this.writer.write({ temporary: `${path}.${process.pid}.${++this.writes}.tmp`, path, body });
  }

  async get(key: string): Promise<StoredArtifact | null> {
    const path = this.pathOf(key);
    try {
      const info = await stat(path);
      return {
        body: createReadStream(path),
        size: info.size,
        contentType: CONTENT_TYPES[extname(path)] ?? 'application/octet-stream',
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.writer.close();
  }

  private pathOf(key: string): string {
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`Artifact key escapes the storage root: ${key}`);
    return path;
  }
}
