import { createReadStream } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { mkdir, stat, unlink, writeFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { OnApplicationShutdown } from '@nestjs/common';
import { ArtifactStorage, StoredArtifact } from './artifact-storage';
import { DEFAULT_PACK_OPTIONS, PACKS_FOLDER, PackSlice, PackWriter, PackWriterOptions } from './pack-writer';

const CONTENT_TYPES: Record<string, string> = {
  '.wav': 'audio/wav',
  '.mp3': 'audio/mpeg',
  '.json': 'application/json',
};

/** `<pack>@<offset>+<length>/<name>`: a slice of a pack file, followed by the artifact's name. */
const PACK_REFERENCE = new RegExp(`^(${PACKS_FOLDER}/\\d{4}-\\d{2}-\\d{2}/[A-Za-z0-9-]+\\.pack)@(\\d+)\\+(\\d+)/(.+)$`);

/**
 * Stores artifacts under one directory, appended to pack files (PackWriter):
 * the reference `put` answers names the pack, the slice and the artifact,
 * such as `packs/2026-11-25/host-41-9f0c2a1e-3.pack@1048576+2310/runs/1/1042-recording.wav`.
 * Artifacts stored by earlier releases as a file each (`runs/1/1042-recording.wav`)
 * are read from their files.
 */
export class LocalArtifactStorage implements ArtifactStorage, OnApplicationShutdown {
  private readonly root: string;
  private readonly packs: PackWriter;

  constructor(root: string, options: PackWriterOptions = DEFAULT_PACK_OPTIONS) {
    this.root = resolve(root);
    this.packs = new PackWriter(this.root, options);
  }

  /**
   * Makes the root if it is missing and proves this process can write in it
   * (a probe file, removed at once): a volume mounted read-only or owned by
   * another user is found at start, with its path, rather than by the first
   * call whose recording cannot be stored.
   */
  async checkWritable(): Promise<void> {
    const probe = join(this.root, `.write-probe-${process.pid}-${randomUUID()}`);
    try {
      await mkdir(this.root, { recursive: true });
      await writeFile(probe, '');
      await unlink(probe);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new Error(`ARTIFACTS_DIR ${this.root} is not writable by this process (${code}): recordings and transcripts could not be stored`, {
        cause: error,
      });
    }
  }

  async put(name: string, body: Buffer): Promise<string> {
    if (!isPlainName(name)) throw new Error(`Not an artifact name: ${name}`);
    const slice = await this.packs.write(body);
    return `${slice.pack}@${slice.offset}+${slice.length}/${name}`;
  }

  async get(key: string): Promise<StoredArtifact | null> {
    const slice = parsePackReference(key);
    const path = this.pathOf(slice ? slice.pack : key);
    const contentType = CONTENT_TYPES[extname(slice ? slice.name : key)] ?? 'application/octet-stream';
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    if (!slice) return { body: createReadStream(path), size, contentType };
    // A pack cut short (restored from an older copy, say) no longer holds the artifact.
    if (size < slice.offset + slice.length) return null;
    const body =
      slice.length === 0 ? Readable.from([]) : createReadStream(path, { start: slice.offset, end: slice.offset + slice.length - 1 });
    return { body, size: slice.length, contentType };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.packs.close();
  }

  private pathOf(key: string): string {
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`Artifact key escapes the storage root: ${key}`);
    return path;
  }
}

function parsePackReference(key: string): (PackSlice & { name: string }) | null {
  const match = PACK_REFERENCE.exec(key);
  if (!match) return null;
  return { pack: match[1], offset: Number(match[2]), length: Number(match[3]), name: match[4] };
}

/** A relative name without `.` or `..` segments: it is kept for reading, never used as a path. */
function isPlainName(name: string): boolean {
  return name.length > 0 && !name.startsWith('/') && name.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}
