import { ArgumentsHost } from '@nestjs/common';
import { open, writeFile } from 'node:fs/promises';
import { HttpExceptionFilter } from './http-exception.filter';
import { isStorageUnavailable } from './storage-unavailable';

/** The file system's own failures, from real calls where this machine can make them. */
describe('isStorageUnavailable', () => {
  it('takes a disk out of space (a write to /dev/full), as itself or as the cause of a wrapping error', async () => {
    const full = await writeFile('/dev/full', 'x').catch((error: unknown) => error);
    expect((full as NodeJS.ErrnoException).code).toBe('ENOSPC');
    expect(isStorageUnavailable(full)).toBe(true);
    expect(isStorageUnavailable(new Error('the pack write failed', { cause: full }))).toBe(true);
  });

  it('takes running out of file descriptors and an I/O error', () => {
    for (const code of ['EMFILE', 'ENFILE', 'EIO', 'EDQUOT']) expect(isStorageUnavailable(Object.assign(new Error(code), { code }))).toBe(true);
  });

  it('leaves a missing file, a permission refused and errors without a code alone', async () => {
    const missing = await open('/nonexistent/file', 'r').catch((error: unknown) => error);
    expect((missing as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(isStorageUnavailable(missing)).toBe(false);
    expect(isStorageUnavailable(Object.assign(new Error('EACCES'), { code: 'EACCES' }))).toBe(false);
    expect(isStorageUnavailable(new Error('boom'))).toBe(false);
    expect(isStorageUnavailable(null)).toBe(false);
  });
});

/** The filter's answer to `exception`, as a Fastify reply would carry it. */
function answer(exception: unknown, filter = quietFilter()): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const sent = { status: 0, headers: {} as Record<string, string>, body: {} as Record<string, unknown> };
  const reply = {
    status(code: number) {
      sent.status = code;
      return reply;
    },
    header(name: string, value: string) {
      sent.headers[name] = value;
      return reply;
    },
    send(body: Record<string, unknown>) {
      sent.body = body;
      return reply;
    },
  };
  const host = {
    switchToHttp: () => ({ getRequest: () => ({ id: 'req-1', method: 'GET', url: '/api/v1/downloads/x/y' }), getResponse: () => reply }),
  } as unknown as ArgumentsHost;
  filter.catch(exception, host);
  return sent;
}

function quietFilter(): HttpExceptionFilter {
  const filter = new HttpExceptionFilter();
  jest.spyOn(filter['logger'], 'error').mockImplementation(() => undefined);
  jest.spyOn(filter['logger'], 'warn').mockImplementation(() => undefined);
  return filter;
}

describe('HttpExceptionFilter on storage that cannot serve now', () => {
  it('answers 503 with Retry-After, not a bare 500', async () => {
    const full = await writeFile('/dev/full', 'x').catch((error: unknown) => error);
    const sent = answer(full);
    expect(sent.status).toBe(503);
    expect(sent.headers['retry-after']).toBe('1');
    expect(sent.body).toMatchObject({ statusCode: 503, code: 'service_unavailable', request_id: 'req-1' });
    expect(sent.body.message).toContain('out of a resource this needs (disk space, file handles)');
  });

  it('still answers a permission refused 500: an operator must mend it', () => {
    expect(answer(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' })).status).toBe(500);
  });
});

describe('HttpExceptionFilter logging', () => {
  it('logs a 503 that passes with time (a dependency away) as one warning a message per 10 s, counting those left out', () => {
    let now = 1_000_000;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const filter = quietFilter();
      const away = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      for (let request = 0; request < 50; request++) expect(answer(away(), filter).status).toBe(503);
      const warn = filter['logger'].warn as unknown as jest.Mock;
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toMatchObject({ left_out: 0 });
      expect(warn.mock.calls[0][1]).toContain('The database is unavailable');
      // Another cause has a line of its own.
      answer(Object.assign(new Error('Connection is closed.'), {}), filter);
      expect(warn).toHaveBeenCalledTimes(2);
      now += 10_000;
      answer(away(), filter);
      expect(warn).toHaveBeenCalledTimes(3);
      expect(warn.mock.calls[2][0]).toMatchObject({ left_out: 49 });
      expect(filter['logger'].error).not.toHaveBeenCalled();
    } finally {
      clock.mockRestore();
    }
  });

  it('logs every other 5xx as an error, each one', () => {
    const filter = quietFilter();
    for (let request = 0; request < 3; request++) expect(answer(new Error('a bug'), filter).status).toBe(500);
    expect(filter['logger'].error).toHaveBeenCalledTimes(3);
  });
});
