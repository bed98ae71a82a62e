import { UseGuards } from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants';
import { RouteConfig } from '@nestjs/platform-fastify';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import { ApiKeyRole } from '@app/persistence';
import { ApiKeyGuard } from './api-key.guard';
import { REQUIRED_ROLE, RequireRole } from './require-role.decorator';

/** What `ApiKeyRoutes` puts in each route's Fastify config: the route needs a key, of this role when not null. */
export interface ApiKeyRouteConfig {
  apiKey?: { role: ApiKeyRole | null };
}

/**
 * A controller whose every route needs an API key (of `role`, when given):
 * `ApiKeyGuard` on it, and a mark in each route's Fastify config, by which
 * the gateway checks the key as soon as the request's head has arrived,
 * before its body is read (create-api-app). A request without a valid key
 * is answered 401 whatever its body (too large, not JSON, of another type),
 * and one whose key lacks the role 403, without the body being read. A
 * route's own `RequireRole` (applied before this, as method decorators are)
 * overrides the controller's, as it does for the guard.
 */
export function ApiKeyRoutes(role?: ApiKeyRole): ClassDecorator {
  return (target) => {
    if (role) RequireRole(role)(target);
    UseGuards(ApiKeyGuard)(target);
    const prototype = target.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
      const handler = descriptor?.value as object | undefined;
      if (typeof handler !== 'function' || Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
      const routeRole: ApiKeyRole | null = Reflect.getMetadata(REQUIRED_ROLE, handler) ?? role ?? null;
      const config: Record<string, unknown> = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler) ?? {};
      RouteConfig({ ...config, apiKey: { role: routeRole } } satisfies ApiKeyRouteConfig)(prototype, name, descriptor!);
    }
  };
}
