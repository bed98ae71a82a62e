/**
 * What the file system answers when it cannot serve now but may soon: out of
 * file descriptors (the process's or the system's), out of space or quota,
 * an I/O error, an operation that would block. Not a missing file, nor a
 * permission refused: those need a look, not a retry.
 */
const CODES: ReadonlySet<string> = new Set(['EMFILE', 'ENFILE', 'ENOSPC', 'EDQUOT', 'EIO', 'EAGAIN']);

/** How deep a chain of causes is followed (an error wrapped by a library, wrapped again). */
const MAX_CAUSES = 5;

/** True when `error`, or an error it was caused by, is the file system's "not now" (CODES). */
export function isStorageUnavailable(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth <= MAX_CAUSES && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
