import { createReadStream, writeFile } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { RecentMap } from '@app/common';
import { ArtifactStorage, StoredArtifact } from './artifact-storage';

const CONTENT_TYPES: Record<string, string> = {
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.json': 'application/json',
};

/** The callback form: it chains open, write and close without a FileHandle object and its promises for each. */
const writeFileOnce = promisify(writeFile);
/** Directories known to exist, so most writes skip the mkdir (bounded: oldest forgotten first). */
const KNOWN_DIRECTORIES_LIMIT = 1000;

/**
 * Stores artifacts as files under one directory. Writes go to a temporary
 * file first and are renamed into place, so a reader never sees half a file.
 */
export class LocalArtifactStorage implements ArtifactStorage {
  private readonly root: string;
  private readonly knownDirectories = new RecentMap<string, true>(KNOWN_DIRECTORIES_LIMIT);
  /** Makes each temporary name unique within the process, even for two writes of one key at once. */
  private writes = 0;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(key: string, body: Buffer): Promise<void> {
    const path = this.pathOf(key);
    const temporary = `${path}.${process.pid}.${++this.writes}.tmp`;
    const directory = dirname(path);
    if (!this.knownDirectories.has(directory)) await this.makeDirectory(directory);
    try {
      await writeFileOnce(temporary, body);
    } catch (error) {
      // The directory was removed since it was made (a clean-up, say): make it again, once.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await this.makeDirectory(directory);
      await writeFileOnce(temporary, body);
    }
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

  private async makeDirectory(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true });
    this.knownDirectories.set(directory, true);
  }

  private pathOf(key: string): string {
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`Artifact key escapes the storage root: ${key}`);
    return path;
  }
}
