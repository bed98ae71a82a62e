import { LoggerService } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';

/**
 * Routes Nest's `Logger` calls into pino, so framework and application lines
 * share one structured JSON stream. An object first argument becomes fields.
 */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: PinoLogger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  private write(level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal', message: unknown, rest: unknown[]): void {
    // Nest passes the context name last; an error's stack may come before it.
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const fields: Record<string, unknown> = context ? { context } : {};
    if (message instanceof Error) {
      this.pino[level]({ ...fields, err: message }, message.message);
      return;
    }
    if (typeof message === 'object' && message !== null) {
      const text = typeof rest[0] === 'string' ? (rest.shift() as string) : undefined;
      this.pino[level]({ ...fields, ...(message as object) }, text);
      return;
    }
    if (typeof rest[0] === 'string' && level === 'error') fields.stack = rest[0];
    this.pino[level](fields, String(message));
  }
}
