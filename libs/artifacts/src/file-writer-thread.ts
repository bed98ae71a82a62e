import { Worker } from 'node:worker_threads';
import { Batcher } from '@app/common';

/** A whole file to write: `body` goes to `temporary`, which is then renamed to `path`. */
export interface FileWrite {
  temporary: string;
  path: string;
  body: Buffer;
}

interface WriteOutcome {
  error?: { message: string; code?: string };
}

interface Reply {
  id: number;
  outcomes: WriteOutcome[];
}

/**
 * The thread's code, plain JavaScript run as its own script. Each message is
 * a batch of writes, done one after the other with synchronous calls: each
 * file's open, write, close and rename cost the thread a few system calls,
 * and the event loop one message a batch. A folder that does not exist (new,
 * or removed since) is made once and the write tried again.
 */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { mkdirSync, renameSync, writeFileSync } = require('node:fs');
const { dirname } = require('node:path');
function writeWhole(write) {
  try {
    writeFileSync(write.temporary, write.body);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
    mkdirSync(dirname(write.temporary), { recursive: true });
    writeFileSync(write.temporary, write.body);
  }
  renameSync(write.temporary, write.path);
}
parentPort.on('message', ({ id, writes }) => {
  const outcomes = writes.map((write) => {
    try {
      writeWhole(write);
      return {};
    } catch (error) {
      return { error: { message: error.message, code: error.code } };
    }
  });
  parentPort.postMessage({ id, outcomes });
});
`;

const GROUPING = { maxBatch: 200, maxInFlight: 2 };

/**
 * Writes files whole on a thread of its own. Through the event loop, every
 * file took four trips to libuv's thread pool (open, write, close, rename),
 * each a wake-up of a pool thread and a callback back, with up to four pool
 * threads creating files in one folder at once: on this machine's disk that
 * cost about twice the CPU per file of one thread writing them in turn
 * (`npm run bench:artifacts`), and with the disk slow the two files of a call
 * were about 40 % of a dialer's CPU per call. Writes that arrive together go
 * to the thread as one message. The thread starts on the first write, is
 * started again if it dies, and keeps the process alive only while writes are
 * pending.
 */
export class FileWriterThread {
  private thread: WriterThread | null = null;
  private nextId = 0;
  private readonly batcher = new Batcher<FileWrite, void>((writes) => this.writeBatch(writes), GROUPING);

  /** Resolves once `body` is in place at `path` (written to `temporary`, then renamed over `path`). */
  write(write: FileWrite): Promise<void> {
    return this.batcher.submit(write);
  }

  /** Stops the thread; writes still pending fail. */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = null;
    if (thread) await thread.worker.terminate();
  }

  private async writeBatch(writes: FileWrite[]): Promise<Array<void | Error>> {
    // Each body is copied once into a buffer of its own, which the message then hands over without a second copy
    // (a small Buffer is a view of a shared pool, which a plain message would copy whole).
    const bodies = writes.map((write) => new Uint8Array(write.body));
    const message = { writes: writes.map((write, index) => ({ temporary: write.temporary, path: write.path, body: bodies[index] })) };
    const reply = await this.send(message, bodies.map((body) => body.buffer as ArrayBuffer));
    return reply.outcomes.map((outcome) =>
      outcome.error ? Object.assign(new Error(outcome.error.message), { code: outcome.error.code }) : undefined,
    );
  }

  private send(message: { writes: unknown[] }, transfer: ArrayBuffer[]): Promise<Reply> {
    const { worker, waiting } = this.started();
    const id = ++this.nextId;
    return new Promise<Reply>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, ...message }, transfer);
    });
  }

  private started(): WriterThread {
    if (this.thread) return this.thread;
    const thread: WriterThread = { worker: new Worker(THREAD_SOURCE, { eval: true }), waiting: new Map() };
    const { worker, waiting } = thread;
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const waiter = waiting.get(reply.id);
      waiting.delete(reply.id);
      if (waiting.size === 0) worker.unref();
      waiter?.resolve(reply);
    });
    // A thread that died fails what it was given; the next write starts a new one.
    const failAll = (error: unknown) => {
      if (this.thread === thread) this.thread = null;
      for (const waiter of waiting.values()) waiter.reject(error);
      waiting.clear();
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new Error(`The file writer thread stopped (exit code ${code})`)));
    this.thread = thread;
    return thread;
  }
}

interface WriterThread {
  worker: Worker;
  /** Batches sent to this thread and not yet answered, by message id. */
  waiting: Map<number, { resolve: (reply: Reply) => void; reject: (error: unknown) => void }>;
}
