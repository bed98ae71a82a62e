import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from './api-key.guard';
import { AuthenticatedKey } from './authenticated-key';

/** The key `ApiKeyGuard` authenticated for this request. */
export const CurrentApiKey = createParamDecorator((_: unknown, context: ExecutionContext): AuthenticatedKey => {
  const key = context.switchToHttp().getRequest<AuthenticatedRequest>().apiKey;
  if (!key) throw new Error('CurrentApiKey used on a route without ApiKeyGuard');
  return key;
});
