import { EventEmitter } from 'node:events';
import { Logger } from '@nestjs/common';
import { CONNECTION_ERROR_LOG_INTERVAL_MS, logConnectionErrors } from './connection-errors';

describe('logConnectionErrors', () => {
  it('logs the first error at once and one line per interval after, counting the errors between', () => {
    const source = new EventEmitter();
    const lines: unknown[] = [];
    const logger = { warn: (fields: unknown) => lines.push(fields) } as unknown as Logger;
    let now = 1_000_000;
    logConnectionErrors(source, 'queue calls', logger, () => now);

    for (let i = 0; i < 5; i++) source.emit('error', new Error(`connect ECONNREFUSED ${i}`));
    expect(lines).toEqual([expect.objectContaining({ source: 'queue calls', errors_since_last_line: 0 })]);

    now += CONNECTION_ERROR_LOG_INTERVAL_MS;
    source.emit('error', new Error('connect ECONNREFUSED 5'));
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ errors_since_last_line: 4, err: new Error('connect ECONNREFUSED 5') });
  });

  it('keeps an emitter with a listener from throwing an unhandled error', () => {
    const source = new EventEmitter();
    logConnectionErrors(source, 'worker calls', { warn: () => undefined } as unknown as Logger);
    expect(() => source.emit('error', new Error('boom'))).not.toThrow();
  });
});
