/**
 * The next call of `target[method]` does its work (the statement commits),
 * then fails as a connection lost before its answer would: the caller cannot
 * tell that it took effect. Answers the spy, to restore when done.
 */
export function loseNextAnswer<T extends object>(target: T, method: keyof T & string): jest.SpyInstance {
  const methods = target as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = methods[method].bind(target);
  return jest.spyOn(methods, method).mockImplementationOnce(async (...args: unknown[]) => {
    await original(...args);
    throw new Error('Connection terminated unexpectedly');
  });
}
