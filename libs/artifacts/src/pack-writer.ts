import { randomBytes } from 'node:crypto';
import { FileHandle, mkdir, open, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { Batcher } from '@app/common';

/** Where an artifact's bytes are: `length` bytes from `offset` in the pack file at `pack` (relative to the root). */
export interface PackSlice {
  pack: string;
  offset: number;
  length: number;
}

export interface PackWriterOptions {
  /** A pack stops taking artifacts once it holds this many bytes; one larger artifact gets a pack of its own. */
  packBytes: number;
  /** Flush each batch to the disk (fdatasync) before answering, so a stored reference outlives a crash of the machine. */
  sync: boolean;
}

export const DEFAULT_PACK_OPTIONS: PackWriterOptions = { packBytes: 64 * 1024 * 1024, sync: true };

/** The folder packs go in, under the storage root. */
export const PACKS_FOLDER = 'packs';

const GROUPING = { maxBatch: 200, maxInFlight: 1 };

interface OpenPack {
  handle: FileHandle;
  relative: string;
  day: string;
  size: number;
}

/**
 * Appends artifacts to pack files: large files this process alone writes,
 * one after the other, so that storing an artifact costs no file of its own
 * (creating a small file cost 15 µs of kernel time on a tmpfs and 30 µs to
 * 1 ms on this machine's ext4 disk; two a call were the largest part of a
 * dialer's CPU when the disk was slow). Artifacts that arrive together are
 * written with one `writev` and, by default, made durable with one
 * `fdatasync`: a batch is answered only once it is on the disk.
 *
 * Packs are named `packs/<UTC day>/<writer>-<n>.pack`, where the writer is
 * unique to this process (host, pid and a random part), so processes on
 * several hosts can share a folder. A pack is never written again once this
 * process moves on from it (full, a new day, a failed write, the process
 * stopped): a write cut short leaves at most unreferenced bytes at its end,
 * and whole days of artifacts can be removed by removing their folder.
 */
export class PackWriter {
  private readonly writer = writerName();
  private readonly batcher = new Batcher<Buffer, PackSlice>((bodies) => this.append(bodies), GROUPING);
  private current: OpenPack | null = null;
  private sequence = 0;
  /** The batch being written, which closing waits for. */
  private appending: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly root: string,
    private readonly options: PackWriterOptions = DEFAULT_PACK_OPTIONS,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Resolves with where `body` was stored, once it is written (and flushed, with `sync`). */
  write(body: Buffer): Promise<PackSlice> {
    return this.batcher.submit(body);
  }

  /** Closes the open pack once the batch being written is done; a later write opens a new one. */
  async close(): Promise<void> {
    await this.appending.catch(() => undefined);
    await this.retire();
  }

  private append(bodies: Buffer[]): Promise<PackSlice[]> {
    const appended = this.appendNow(bodies);
    this.appending = appended;
    return appended;
  }

  private async appendNow(bodies: Buffer[]): Promise<PackSlice[]> {
    const total = bodies.reduce((sum, body) => sum + body.length, 0);
    const pack = await this.packFor(total);
    try {
      await writeAll(pack.handle, bodies, pack.size);
      if (this.options.sync) await pack.handle.datasync();
    } catch (error) {
      await this.discardFailedBatch(pack);
      throw error;
    }
    let offset = pack.size;
    pack.size += total;
    return bodies.map((body) => {
      const slice = { pack: pack.relative, offset, length: body.length };
      offset += body.length;
      return slice;
    });
  }

  private async packFor(bytes: number): Promise<OpenPack> {
    const day = this.now().toISOString().slice(0, 10);
    const current = this.current;
    if (current && current.day === day && (current.size === 0 || current.size + bytes <= this.options.packBytes)) return current;
    await this.retire();
    for (;;) {
      const relative = join(PACKS_FOLDER, day, `${this.writer}-${++this.sequence}.pack`);
      const path = join(this.root, relative);
      const created = await mkdir(dirname(path), { recursive: true });
      try {
        // `wx`: a pack is only ever one writer's; should the name exist, the next number is tried.
        const handle = await open(path, 'wx');
        // A new pack's name (and a new day's folder) is flushed too, before any key naming them is handed out:
        // fdatasync makes the bytes durable, not the directory entry that finds them after a crash.
        if (this.options.sync) await syncFolders(dirname(path), created).catch(async (error: unknown) => {
          await handle.close().catch(() => undefined);
          throw error;
        });
        this.current = { handle, relative, day, size: 0 };
        return this.current;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  }

  /**
   * After a batch that failed part-way (a full disk): what reached the file
   * is unknown, so the next batch starts a new pack rather than writing after
   * it, and the failed batch's bytes, which no key names, are taken off: a
   * pack that held nothing before it is removed, another cut back to what it
   * held. Else a full disk, retried by every upload and collection, left one
   * more pack of stray bytes at each try. Best effort: a pack that cannot be
   * cut or removed is only retired.
   */
  private async discardFailedBatch(pack: OpenPack): Promise<void> {
    if (this.current === pack) this.current = null;
    if (pack.size > 0) await pack.handle.truncate(pack.size).catch(() => undefined);
    await pack.handle.close().catch(() => undefined);
    if (pack.size === 0) await unlink(join(this.root, pack.relative)).catch(() => undefined);
  }

  private async retire(): Promise<void> {
    const current = this.current;
    this.current = null;
    await current?.handle.close().catch(() => undefined);
  }
}

/**
 * Flushes `folder` and the one above it (the day's folder may have been made
 * by another writer sharing the root, which this one cannot know has flushed
 * it), and every folder from the first one `mkdir` created (`created`) up.
 */
async function syncFolders(folder: string, created: string | undefined): Promise<void> {
  const folders = [folder, dirname(folder)];
  if (created) {
    for (let current = folder; current !== created && dirname(current) !== current; current = dirname(current)) folders.push(dirname(current));
    folders.push(dirname(created));
  }
  for (const path of new Set(folders)) {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

/** Writes every byte of `bodies` from `position`; `writev` may write fewer than asked. */
export async function writeAll(handle: Pick<FileHandle, 'writev'>, bodies: Buffer[], position: number): Promise<void> {
  let pending = bodies.filter((body) => body.length > 0);
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending, position);
    if (bytesWritten === 0) throw new Error('The pack file took no bytes');
    position += bytesWritten;
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const body of pending) {
      if (skip >= body.length) {
        skip -= body.length;
        continue;
      }
      rest.push(skip > 0 ? body.subarray(skip) : body);
      skip = 0;
    }
    pending = rest;
  }
}

function writerName(): string {
  const host = hostname().replace(/[^A-Za-z0-9-]/g, '').slice(0, 40) || 'host';
  return `${host}-${process.pid}-${randomBytes(4).toString('hex')}`;
}
