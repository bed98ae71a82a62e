import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { Errors } from '@app/common';
import { ApiKeyRole } from '@app/persistence';
import { ApiKeyAuthenticator, ApiKeyCheck } from './api-key-authenticator.service';
import { AuthenticatedKey } from './authenticated-key';
import { REQUIRED_ROLE } from './require-role.decorator';

export type AuthenticatedRequest = FastifyRequest & {
  apiKey?: AuthenticatedKey;
  /** When the answer `apiKey` rests on was read, and how many keys this replica had revoked before. */
  apiKeyCheck?: ApiKeyCheck;
};

/**
 * Accepts `X-API-Key: <key>` or `Authorization: Bearer <key>`. The gateway
 * checks the key of a request with a body, on a route marked by
 * `ApiKeyRoutes`, as soon as its head has arrived (`checkRequestKey`, before
 * the body is read); the guard then finds the key on the request and checks
 * the role again, and the key again too when a key was revoked on this
 * replica since, or the lookup its head was checked by (perhaps a cached
 * one) is older than a cached lookup lives. Any other request (one without a body, or on a route
 * guarded without the mark) has its key checked here.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly authenticator: ApiKeyAuthenticator,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const role =
      this.reflector.getAllAndOverride<ApiKeyRole | undefined>(REQUIRED_ROLE, [context.getHandler(), context.getClass()]) ?? null;
    // Checked on its head: still good unless a key was revoked meanwhile or the lookup that check rests on is older
    // than a cached one lives (a body sent slowly, byte by byte, must not carry a revoked key's request through).
    if (request.apiKey && request.apiKeyCheck && this.authenticator.checkStillGood(request.apiKeyCheck)) return hasRole(request.apiKey, role);
    return checkRequestKey(this.authenticator, request, role).then(() => true);
  }
}

/**
 * Authenticates the request's key (401 when it has none, or an unknown or
 * revoked one) and checks its role (403), keeping the key on the request as
 * `apiKey`.
 */
export async function checkRequestKey(
  authenticator: ApiKeyAuthenticator,
  request: AuthenticatedRequest,
  role: ApiKeyRole | null,
): Promise<void> {
  const presented = presentedKey(request);
  if (!presented) throw Errors.unauthorized();
  const { key, check } = await authenticator.check(presented);
  if (!key) throw Errors.unauthorized('The API key is unknown or revoked');
  hasRole(key, role);
  request.apiKey = key;
  request.apiKeyCheck = check;
}

/** True when the route needs no particular role or the key has it; 403 otherwise. */
function hasRole(key: AuthenticatedKey, role: ApiKeyRole | null): true {
  if (role && key.role !== role) throw Errors.forbidden(`This endpoint needs an API key with the ${role} role`);
  return true;
}

function presentedKey(request: FastifyRequest): string | null {
  const header = request.headers['x-api-key'];
  const apiKey = Array.isArray(header) ? header[0] : header;
  if (apiKey && apiKey.trim()) return apiKey.trim();
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return match ? match[1] : null;
}
