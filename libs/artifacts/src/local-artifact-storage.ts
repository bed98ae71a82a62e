import { createReadStream } from 'node:fs';
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { ArtifactStorage, StoredArtifact } from './artifact-storage';

const CONTENT_TYPES: Record<string, string> = {
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.json': 'application/json',
};

/**
 * Stores artifacts as files under one directory. Writes go to a temporary
 * file first and are renamed into place, so a reader never sees half a file.
 */
export class LocalArtifactStorage implements ArtifactStorage {
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(key: string, body: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(temporary, body);
    await rename(temporary, path);
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

  private pathOf(key: string): string {
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`Artifact key escapes the storage root: ${key}`);
    return path;
  }
}
