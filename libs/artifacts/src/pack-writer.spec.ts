import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { FileHandle, open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PackWriter, writeAll } from './pack-writer';

describe('PackWriter', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'va-packs-'));
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('lays the slices of one batch end to end, each where its answer says', async () => {
    const writer = new PackWriter(root);
    const bodies = ['alpha', '', 'beta', 'gamma'].map((text) => Buffer.from(text));
    const slices = await Promise.all(bodies.map((body) => writer.write(body)));
    await writer.close();
    expect(slices.map(({ offset, length }) => [offset, length])).toEqual([
      [0, 5],
      [5, 0],
      [5, 4],
      [9, 5],
    ]);
    const pack = readFileSync(join(root, slices[0].pack), 'utf8');
    expect(pack).toBe('alphabetagamma');
    expect(slices.every((slice) => slice.pack === slices[0].pack)).toBe(true);
  });

  it('starts a pack in a new folder when the UTC day changes', async () => {
    let now = new Date('2026-11-25T23:59:59.900Z');
    const writer = new PackWriter(root, { packBytes: 1024, sync: false }, () => now);
    const before = await writer.write(Buffer.from('late'));
    now = new Date('2026-11-26T00:00:00.100Z');
    const after = await writer.write(Buffer.from('early'));
    await writer.close();
    expect(before.pack).toMatch(/^packs\/2026-11-25\/.+-1\.pack$/);
    expect(after.pack).toMatch(/^packs\/2026-11-26\/.+-2\.pack$/);
    expect(after.offset).toBe(0);
    expect(readdirSync(join(root, 'packs')).sort()).toEqual(['2026-11-25', '2026-11-26']);
  });

  it('leaves no stray bytes nor packs behind batches that fail part-way, as on a full disk, and goes on once writes succeed', async () => {
    const writer = new PackWriter(root, { packBytes: 1024, sync: true });
    const committed = await writer.write(Buffer.from('committed'));
    // Every file handle's writev: half of what it was given reaches the file, then the disk is full.
    const probe = await open(join(root, 'probe'), 'w');
    const prototype = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const realWritev = prototype.writev;
    const full = jest.spyOn(prototype, 'writev').mockImplementation(async function (this: FileHandle, buffers: readonly NodeJS.ArrayBufferView[], position?: number) {
      const first = buffers[0] as Buffer;
      await realWritev.call(this, [first.subarray(0, Math.ceil(first.length / 2))], position);
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    });
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        await expect(writer.write(Buffer.from(`doomed-${attempt}`))).rejects.toMatchObject({ code: 'ENOSPC' });
      }
    } finally {
      full.mockRestore();
    }
    const after = await writer.write(Buffer.from('after'));
    await writer.close();
    const day = committed.pack.split('/')[1];
    // The first pack cut back to what it held; the empty ones the failed batches began, removed.
    expect(readdirSync(join(root, 'packs', day)).sort()).toEqual([committed.pack, after.pack].map((pack) => pack.split('/')[2]).sort());
    expect(readFileSync(join(root, committed.pack), 'utf8')).toBe('committed');
    expect(after.pack).not.toBe(committed.pack);
    expect(readFileSync(join(root, after.pack), 'utf8')).toBe('after');
  });

  it('names its packs after this process, apart from another writer in the same folder', async () => {
    const first = new PackWriter(root);
    const second = new PackWriter(root);
    const [a, b] = await Promise.all([first.write(Buffer.from('a')), second.write(Buffer.from('b'))]);
    await Promise.all([first.close(), second.close()]);
    expect(a.pack).not.toBe(b.pack);
    expect(a.pack).toContain(`-${process.pid}-`);
    expect(readFileSync(join(root, a.pack), 'utf8')).toBe('a');
    expect(readFileSync(join(root, b.pack), 'utf8')).toBe('b');
  });
});

describe('writeAll', () => {
  it('goes on after a writev that wrote part of what it was given, from where it stopped', async () => {
    const file = Buffer.alloc(32, '.');
    const calls: Array<{ position: number; sizes: number[] }> = [];
    const handle = {
      // Takes at most 4 bytes a call, as a file system may.
      writev: async (buffers: NodeJS.ArrayBufferView[], position: number) => {
        calls.push({ position, sizes: buffers.map((buffer) => buffer.byteLength) });
        const all = Buffer.concat(buffers.map((buffer) => Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength)));
        const taken = all.subarray(0, 4);
        taken.copy(file, position);
        return { bytesWritten: taken.length, buffers };
      },
    } as unknown as Pick<FileHandle, 'writev'>;
    await writeAll(handle, [Buffer.from('abc'), Buffer.from(''), Buffer.from('defgh'), Buffer.from('ij')], 2);
    expect(file.toString('utf8', 0, 14)).toBe('..abcdefghij..');
    expect(calls).toEqual([
      { position: 2, sizes: [3, 5, 2] },
      { position: 6, sizes: [4, 2] },
      { position: 10, sizes: [2] },
    ]);
  });

  it('fails rather than loop when the file takes nothing', async () => {
    const handle = { writev: async () => ({ bytesWritten: 0, buffers: [] }) } as unknown as Pick<FileHandle, 'writev'>;
    await expect(writeAll(handle, [Buffer.from('x')], 0)).rejects.toThrow(/took no bytes/);
  });
});
