import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { artifactKey } from './artifact-storage';
import { LocalArtifactStorage } from './local-artifact-storage';

async function readAll(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Every pack file under the root, as paths relative to it. */
function packsUnder(root: string): string[] {
  const packs = join(root, 'packs');
  return readdirSync(packs).flatMap((day) => readdirSync(join(packs, day)).map((file) => `packs/${day}/${file}`));
}

describe('LocalArtifactStorage', () => {
  let root: string;
  let storage: LocalArtifactStorage;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'va-artifacts-'));
    storage = new LocalArtifactStorage(root);
  });

  afterEach(async () => {
    await storage.onApplicationShutdown();
    rmSync(root, { recursive: true, force: true });
  });

  it('stores an artifact and reads it back by the key it answered, with its size and content type', async () => {
    const key = await storage.put('runs/0/7-transcript.json', Buffer.from('{"turns":[]}'));
    const today = new Date().toISOString().slice(0, 10);
    expect(key).toMatch(new RegExp(`^packs/${today}/[A-Za-z0-9-]+-1\\.pack@0\\+12/runs/0/7-transcript\\.json$`));
    const stored = await storage.get(key);
    expect(stored).toMatchObject({ size: 12, contentType: 'application/json' });
    expect(await readAll(stored!.read())).toBe('{"turns":[]}');
  });

  it('appends artifacts written at once to one pack, each read back whole from its own slice', async () => {
    const names = Array.from({ length: 300 }, (_, index) => artifactKey(index * 7, 'transcript', 'json'));
    const keys = await Promise.all(names.map((name, index) => storage.put(name, Buffer.from(`{"n":${index}}`))));
    const bodies = await Promise.all(keys.map(async (key) => readAll((await storage.get(key))!.read())));
    expect(bodies).toEqual(names.map((_, index) => `{"n":${index}}`));
    expect(new Set(keys).size).toBe(300);
    expect(packsUnder(root)).toHaveLength(1);
    // Nothing else is made: no file per artifact, no temporary files.
    expect(readdirSync(root)).toEqual(['packs']);
  });

  it('keeps both copies of an artifact stored twice, each readable by its own key', async () => {
    const first = await storage.put('runs/0/9-recording.wav', Buffer.from('first'));
    const second = await storage.put('runs/0/9-recording.wav', Buffer.from('second'));
    expect(first).not.toBe(second);
    expect(await readAll((await storage.get(first))!.read())).toBe('first');
    const stored = await storage.get(second);
    expect(stored).toMatchObject({ size: 6, contentType: 'audio/wav' });
    expect(await readAll(stored!.read())).toBe('second');
  });

  it('reads a range of an artifact from within its own slice of the pack, and never past it', async () => {
    const before = await storage.put('runs/0/4-transcript.json', Buffer.from('0123456789'));
    const key = await storage.put('runs/0/5-transcript.json', Buffer.from('abcdefghij'));
    const after = await storage.put('runs/0/6-transcript.json', Buffer.from('KLMNOPQRST'));
    expect([before, after].map((each) => each.split('@')[0])).toEqual([key.split('@')[0], key.split('@')[0]]);
    expect(await readAll((await storage.get(key))!.read({ start: 2, end: 4 }))).toBe('cde');
    expect(await readAll((await storage.get(key))!.read({ start: 9, end: 9 }))).toBe('j');
    // A range outside the artifact reads nothing, rather than the next artifact's bytes.
    expect(await readAll((await storage.get(key))!.read({ start: 5, end: 12 }))).toBe('');
  });

  it('answers null, not an error, for an artifact whose pack or folder is gone, or whose pack was cut short', async () => {
    const key = await storage.put('runs/0/7-recording.wav', Buffer.from('RIFF-and-more'));
    await storage.onApplicationShutdown();
    const pack = key.split('@')[0];
    truncateSync(join(root, pack), 4);
    expect(await storage.get(key)).toBeNull();
    rmSync(join(root, pack));
    expect(await storage.get(key)).toBeNull();
    // The day's folder a file (ENOTDIR), or gone.
    const day = pack.split('/').slice(0, 2).join('/');
    rmSync(join(root, day), { recursive: true });
    writeFileSync(join(root, day), 'not a folder');
    expect(await storage.get(key)).toBeNull();
    rmSync(join(root, day));
    expect(await storage.get(key)).toBeNull();
  });

  it('starts a new pack once one is full, and gives a larger artifact a pack of its own', async () => {
    await storage.onApplicationShutdown();
    storage = new LocalArtifactStorage(root, { packBytes: 10, sync: false });
    const small = await storage.put('runs/0/1-transcript.json', Buffer.from('123456'));
    const large = await storage.put('runs/0/2-recording.wav', Buffer.alloc(25, 'r'));
    const after = await storage.put('runs/0/3-transcript.json', Buffer.from('abc'));
    expect([small, large, after].map((key) => key.split('@')[0]).every((pack, index, all) => all.indexOf(pack) === index)).toBe(true);
    expect(packsUnder(root)).toHaveLength(3);
    expect(await readAll((await storage.get(large))!.read())).toBe('r'.repeat(25));
    expect(await readAll((await storage.get(after))!.read())).toBe('abc');
  });

  it('makes the pack folder again when it was removed, in a new pack', async () => {
    await storage.put('runs/0/8-transcript.json', Buffer.from('a'));
    await storage.onApplicationShutdown();
    rmSync(join(root, 'packs'), { recursive: true, force: true });
    const key = await storage.put('runs/0/8-recording.wav', Buffer.from('b'));
    expect(await readAll((await storage.get(key))!.read())).toBe('b');
  });

  it('proves at start that it can write under its root, making the root if missing, and leaves nothing behind', async () => {
    const missing = new LocalArtifactStorage(join(root, 'made', 'at', 'start'));
    await missing.checkWritable();
    expect(readdirSync(join(root, 'made', 'at', 'start'))).toEqual([]);

    writeFileSync(join(root, 'file'), 'a file where a folder should be');
    const unusable = new LocalArtifactStorage(join(root, 'file', 'artifacts'));
    await expect(unusable.checkWritable()).rejects.toThrow(
      `ARTIFACTS_DIR ${join(root, 'file', 'artifacts')} is not writable by this process (ENOTDIR): recordings and transcripts could not be stored`,
    );
  });

  it('fails the writes of a batch that cannot be made, with their cause, and writes the next batch to a new pack', async () => {
    const first = await storage.put('runs/0/1-transcript.json', Buffer.from('x'));
    await storage.onApplicationShutdown();
    rmSync(join(root, 'packs'), { recursive: true, force: true });
    writeFileSync(join(root, 'packs'), 'a file where a folder should be');
    const failing = [1, 2].map((run) => storage.put(`runs/0/${run}-recording.wav`, Buffer.from('y')));
    for (const write of failing) await expect(write).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTDIR|EEXIST)$/) });
    rmSync(join(root, 'packs'));
    const next = await storage.put('runs/0/3-transcript.json', Buffer.from('z'));
    expect(next.split('@')[0]).not.toBe(first.split('@')[0]);
    expect(await readAll((await storage.get(next))!.read())).toBe('z');
  });

  it('writes again after it was shut down, to a new pack', async () => {
    const before = await storage.put('runs/0/3-transcript.json', Buffer.from('before'));
    await storage.onApplicationShutdown();
    const after = await storage.put('runs/0/3-transcript.json', Buffer.from('after'));
    expect(after.split('@')[0]).not.toBe(before.split('@')[0]);
    expect(await readAll((await storage.get(before))!.read())).toBe('before');
    expect(await readAll((await storage.get(after))!.read())).toBe('after');
  });

  it('reads an artifact stored as a file of its own by an earlier release', async () => {
    mkdirSync(join(root, 'runs/1'), { recursive: true });
    writeFileSync(join(root, 'runs/1/1042-recording.wav'), 'RIFF....');
    const stored = await storage.get('runs/1/1042-recording.wav');
    expect(stored).toMatchObject({ size: 8, contentType: 'audio/wav' });
    expect(await readAll(stored!.read())).toBe('RIFF....');
  });

  it('answers null for an artifact that is not there, or that its pack no longer holds whole', async () => {
    expect(await storage.get('runs/9/transcript.json')).toBeNull();
    expect(await storage.get('packs/2026-01-01/gone-1-abc-1.pack@0+5/runs/0/1-transcript.json')).toBeNull();
    const key = await storage.put('runs/0/4-transcript.json', Buffer.from('0123456789'));
    const pack = join(root, key.split('@')[0]);
    expect(readFileSync(pack, 'utf8')).toBe('0123456789');
    truncateSync(pack, 5);
    expect(await storage.get(key)).toBeNull();
  });

  it('names a run’s artifacts by a folder of a thousand runs, as their files were', () => {
    expect(artifactKey(1042, 'recording', 'wav')).toBe('runs/1/1042-recording.wav');
    expect(artifactKey(7, 'transcript', 'json')).toBe('runs/0/7-transcript.json');
  });

  it('refuses a name or a key that leaves the storage root', async () => {
    await expect(storage.put('../outside.json', Buffer.from('x'))).rejects.toThrow(/Not an artifact name/);
    await expect(storage.put('/etc/passwd', Buffer.from('x'))).rejects.toThrow(/Not an artifact name/);
    await expect(storage.get('../outside.json')).rejects.toThrow(/escapes the storage root/);
  });
});
