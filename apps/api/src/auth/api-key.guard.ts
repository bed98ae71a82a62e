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
 * Accepts `X-API-Key: <key>` or `Authorization: Bearer <key>`. The gateway
 * checks the key of a route marked by `ApiKeyRoutes` as soon as the
 * request's head has arrived (`checkRequestKey`, before the body is read);
 * the guard then finds the key on the request and only checks the role
 * again. A route guarded without that mark has its key checked here, once
 * the body is in.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const role = this.reflector.getAllAndOverride<ApiKeyRole | undefined>(REQUIRED_ROLE, [
      context.getHandler(),
      context.getClass(),
    ]);
    await checkRequestKey(this.authenticator, request, role ?? null);
    return true;
  }
}

/**
 * Authenticates the request's key (401 when it has none, or an unknown or
 * revoked one) and checks its role (403), keeping the key on the request as
 * `apiKey`. A request checked already keeps its key; only the role is
 * checked again.
 */
export async function checkRequestKey(
  authenticator: ApiKeyAuthenticator,
  request: AuthenticatedRequest,
  role: ApiKeyRole | null,
): Promise<AuthenticatedKey> {
  let key = request.apiKey;
  if (!key) {
    const presented = presentedKey(request);
    if (!presented) throw Errors.unauthorized();
    const found = await authenticator.authenticate(presented);
    if (!found) throw Errors.unauthorized('The API key is unknown or revoked');
    key = found;
  }
  if (role && key.role !== role) throw Errors.forbidden(`This endpoint needs an API key with the ${role} role`);
  request.apiKey = key;
  return key;
}

function presentedKey(request: FastifyRequest): string | null {
  const header = request.headers['x-api-key'];
  const apiKey = Array.isArray(header) ? header[0] : header;
  if (apiKey && apiKey.trim()) return apiKey.trim();
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match ? match[1] : null;
}
