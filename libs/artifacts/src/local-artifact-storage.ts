import { randomUUID } from 'node:crypto';
import { FileHandle, mkdir, open, unlink, writeFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { OnApplicationShutdown } from '@nestjs/common';
import { ArtifactStorage, ByteRange, StoredArtifact } from './artifact-storage';
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

  /**
   * Opens the file first and sizes it by its open handle: a pack or a day's
   * folder removed (retention) between a look and the open is then not found
   * (null) rather than a stream that fails once its answer has begun.
   */
  async get(key: string): Promise<StoredArtifact | null> {
    const slice = parsePackReference(key);
    const path = this.pathOf(slice ? slice.pack : key);
    const contentType = CONTENT_TYPES[extname(slice ? slice.name : key)] ?? 'application/octet-stream';
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if (NOT_THERE.has((error as NodeJS.ErrnoException).code ?? '')) return null;
      throw error;
    }
    let fileSize: number;
    try {
      fileSize = (await handle.stat()).size;
    } catch (error) {
      await handle.close();
      throw error;
    }
    // A pack cut short (restored from an older copy, say) no longer holds the artifact.
    if (slice && fileSize < slice.offset + slice.length) {
      await handle.close();
      return null;
    }
    return openedArtifact(handle, slice ? slice.offset : 0, slice ? slice.length : fileSize, contentType);
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

/** What opening a file that is not (or no longer) there fails with. */
const NOT_THERE = new Set(['ENOENT', 'ENOTDIR']);

/** `size` bytes of an open file from `base`, closed once read (or destroyed) or closed unread. */
function openedArtifact(handle: FileHandle, base: number, size: number, contentType: string): StoredArtifact {
  let taken = false;
  return {
    contentType,
    size,
    read(range: ByteRange = { start: 0, end: size - 1 }) {
      if (taken) throw new Error('An artifact is read once');
      taken = true;
      if (range.start < 0 || range.end >= size || range.start > range.end) {
        void handle.close();
        return Readable.from([]);
      }
      return handle.createReadStream({ start: base + range.start, end: base + range.end, autoClose: true });
    },
    async close() {
      if (taken) return;
      taken = true;
      await handle.close();
    },
  };
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
