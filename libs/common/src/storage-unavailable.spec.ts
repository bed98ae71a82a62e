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

describe('HttpExceptionFilter on storage that cannot serve now', () => {
  function answer(exception: unknown): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
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
    const filter = new HttpExceptionFilter();
    jest.spyOn(filter['logger'], 'error').mockImplementation(() => undefined);
    filter.catch(exception, host);
    return sent;
  }

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
