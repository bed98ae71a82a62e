import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { Errors } from '@app/common';
import { ApiKeyRole } from '@app/persistence';
import { ApiKeyAuthenticator } from './api-key-authenticator.service';
import { AuthenticatedKey } from './authenticated-key';
import { REQUIRED_ROLE } from './require-role.decorator';

export type AuthenticatedRequest = FastifyRequest & { apiKey?: AuthenticatedKey };

/**
 * Accepts `X-API-Key: <key>` or `Authorization: Bearer <key>`. Runs before
 * validation, so a request without credentials is a 401 whatever its body.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const presented = presentedKey(request);
    if (!presented) throw Errors.unauthorized();
    const key = await this.authenticator.authenticate(presented);
    if (!key) throw Errors.unauthorized('The API key is unknown or revoked');
    const role = this.reflector.getAllAndOverride<ApiKeyRole | undefined>(REQUIRED_ROLE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (role && key.role !== role) throw Errors.forbidden(`This endpoint needs an API key with the ${role} role`);
    request.apiKey = key;
    return true;
  }
}

function presentedKey(request: FastifyRequest): string | null {
  const header = request.headers['x-api-key'];
  const apiKey = Array.isArray(header) ? header[0] : header;
  if (apiKey && apiKey.trim()) return apiKey.trim();
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match ? match[1] : null;
}
