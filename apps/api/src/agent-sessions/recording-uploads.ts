import type { IncomingMessage, ServerResponse } from 'node:http';
import { Injectable } from '@nestjs/common';
import { DomainError } from '@app/common';

/** Largest recording body read, in bytes. */
export const RECORDING_LIMIT_BYTES = 100 * 1024 * 1024;
/** Recording bodies this process holds at once, by their Content-Length (one without counts as the largest allowed). */
export const RECORDING_BYTES_IN_FLIGHT = 256 * 1024 * 1024;

/** The recording's declared size, or the largest allowed when it declares none (chunked) or an unreadable one. */
export function declaredBytes(header: string | undefined): number {
  const bytes = Number(header);
  return header !== undefined && Number.isSafeInteger(bytes) && bytes >= 0 ? Math.min(bytes, RECORDING_LIMIT_BYTES) : RECORDING_LIMIT_BYTES;
}

/**
 * A second upload for a run while this gateway still receives or stores its
 * first: refused before its body is read, as one to retry (429). The first
 * may be a connection the runtime gave up on: cut short, it stores nothing;
 * complete, it is stored, and the retry then gets 409.
 */
export function recordingUploadInProgress(): DomainError {
  return new DomainError(429, 'recording_upload_in_progress', "This run's recording is still being received; retry shortly");
}

/** One admitted upload's share of the budget and its run's place, given back once. */
interface Hold {
  /** When its head was admitted: what its token's expiry is judged at. */
  admittedAt: Date;
  handled: boolean;
  release: () => void;
  /** Told once the upload is known to store nothing: its connection closed before its handler ran, or the handler failed. */
  storedNothing: () => Promise<void>;
}

/**
 * The recording uploads this process has admitted: the bytes their bodies
 * may hold at once, and one upload a run at a time (a run keeps one
 * recording; a second racing the first would be read, and written, only to
 * be refused).
 *
 * An upload holds its share from its admission (on its head) until its
 * handler has finished with the body, stored or refused, and not merely
 * until its connection closes: a client that gives up once its body is sent
 * (a timeout while the gateway writes to a slow disk) leaves the body in
 * memory and its write going on, and a retry admitted then would be read
 * beside it. An upload whose handler never runs (its body cut short, over
 * the size limit) gives its share back when its connection closes.
 */
@Injectable()
export class RecordingUploads {
  private held = 0;
  private readonly runs = new Set<number>();
  private readonly holds = new WeakMap<IncomingMessage, Hold>();

  /**
   * Admits the upload of `request`, or throws its 429 (answered with
   * Retry-After by the admission's hook). `storedNothing` is called once if the upload, admitted,
   * then stores nothing.
   */
  admit(runId: number, request: IncomingMessage, response: ServerResponse, storedNothing: () => Promise<void> = async () => undefined): void {
    this.assertRoom(runId, request);
    const bytes = declaredBytes(request.headers['content-length']);
    this.held += bytes;
    this.runs.add(runId);
    let released = false;
    const hold: Hold = {
      admittedAt: new Date(),
      handled: false,
      release: () => {
        if (released) return;
        released = true;
        this.held -= bytes;
        this.runs.delete(runId);
      },
      storedNothing,
    };
    this.holds.set(request, hold);
    response.once('close', () => {
      if (hold.handled) return;
      hold.release();
      void storedNothing();
    });
  }

  /**
   * Throws the 429 `admit` would, taking nothing: asked before the upload is noted on its run, so an
   * upload refused here does not replace there the admission of the one
   * already arriving.
   */
  assertRoom(runId: number, request: IncomingMessage): void {
    if (this.runs.has(runId)) throw recordingUploadInProgress();
    if (this.held + declaredBytes(request.headers['content-length']) > RECORDING_BYTES_IN_FLIGHT) {
      throw new DomainError(429, 'recording_uploads_busy', 'This gateway is receiving as many recordings as it holds at once; retry shortly');
    }
  }

  /**
   * Runs the handler of an admitted upload, told when the upload was
   * admitted (now, for one this process did not admit); its share is given
   * back when it is done.
   */
  async handle<T>(request: IncomingMessage, work: (admittedAt: Date) => Promise<T>): Promise<T> {
    const hold = this.holds.get(request);
    if (hold) hold.handled = true;
    try {
      return await work(hold?.admittedAt ?? new Date());
    } catch (error) {
      // Forgotten before the refusal is answered: a client that sends its upload again at once is not told another
      // is still arriving (the run notes one admission at a time).
      await hold?.storedNothing();
      throw error;
    } finally {
      hold?.release();
    }
  }
}
