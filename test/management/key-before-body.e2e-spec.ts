import { randomUUID } from 'node:crypto';
import { RequestMethod } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants';
import { ApiKeyGuard } from '../../apps/api/src/auth/api-key.guard';
import { ApiKeyRouteConfig } from '../../apps/api/src/auth/api-key-routes.decorator';
import { REQUIRED_ROLE } from '../../apps/api/src/auth/require-role.decorator';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { expectError, headOnlyPost, issueKey } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

interface GuardedRoute {
  method: string;
  path: string;
  role: string | null;
  config: ApiKeyRouteConfig | undefined;
}

/**
 * Every route behind the API key has its key (and role) checked before its
 * body is read: found by walking the app's controllers, so a route added
 * later without the mark fails here.
 */
describe('the API key before the body, on every route that needs one', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let triggerKey: string;
  let routes: GuardedRoute[];

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    org = await createOrganization(apps.dataSource, 'Key before body');
    triggerKey = (await issueKey(apps.dataSource, org.organizationId, { role: 'trigger' })).key;
    routes = guardedRoutes(apps);
  });
  afterAll(() => apps.close());

  it('finds the guarded routes, each marked with the role its guard checks', () => {
    expect(routes.length).toBeGreaterThanOrEqual(15);
    expect(routes.map((route) => `${route.method} ${route.path}`)).toEqual(
      expect.arrayContaining(['POST /api/v1/public/agent/:uuid', 'GET /api/v1/workflow/:workflow_id/runs/:run_id', 'POST /api/v1/workflows']),
    );
    for (const route of routes) expect({ route: `${route.method} ${route.path}`, mark: route.config?.apiKey }).toEqual({
      route: `${route.method} ${route.path}`,
      mark: { role: route.role },
    });
  });

  it('answers 401 on each of them to a request without a key whose body would be refused (415), and to one with an unknown key', async () => {
    for (const route of routes) {
      const path = concretePath(route.path);
      const withBody = route.method !== 'GET' && route.method !== 'DELETE';
      const options = withBody ? { raw: 'not json', headers: { 'content-type': 'text/plain' } } : {};
      for (const key of [undefined, 'vak_not-a-real-key']) {
        const response = await apps.client.request(route.method, path, undefined, { ...options, key });
        expect({ route: `${route.method} ${route.path}`, key, status: response.status, code: response.body?.code }).toEqual({
          route: `${route.method} ${route.path}`,
          key,
          status: 401,
          code: 'unauthorized',
        });
      }
    }
  });

  it('answers 403 to a trigger key on a management route before reading its body, however malformed', async () => {
    const malformed = await apps.client.post('/api/v1/workflows', undefined, { key: triggerKey, raw: '{"name": ' });
    expectError(malformed, 403, 'forbidden');
    const headOnly = await headOnlyPost(apps.baseUrl, '/api/v1/workflows', { 'content-type': 'application/json', 'x-api-key': triggerKey });
    expect(headOnly.status).toBe(403);
    // An admin key's malformed body is the body's refusal.
    expectError(await apps.client.post('/api/v1/workflows', undefined, { key: org.adminKey, raw: '{"name": ' }), 400, 'invalid_json');
  });
});

/** The routes of the app's controllers that `ApiKeyGuard` guards, with the role the guard would require. */
function guardedRoutes(apps: TestApps): GuardedRoute[] {
  const reflector = new Reflector();
  const found: GuardedRoute[] = [];
  for (const wrapper of apps.api.get(DiscoveryService).getControllers()) {
    const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
    if (!controller) continue;
    const prototype = controller.prototype as Record<string, object>;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const handler = prototype[name];
      const method = typeof handler === 'function' ? Reflect.getMetadata(METHOD_METADATA, handler) : undefined;
      if (method === undefined) continue;
      const guards: unknown[] = [...(Reflect.getMetadata(GUARDS_METADATA, controller) ?? []), ...(Reflect.getMetadata(GUARDS_METADATA, handler) ?? [])];
      if (!guards.includes(ApiKeyGuard)) continue;
      const path = ['', Reflect.getMetadata(PATH_METADATA, controller), Reflect.getMetadata(PATH_METADATA, handler)]
        .filter((part: string | undefined) => part !== undefined && part !== '/' && part !== '')
        .join('/');
      found.push({
        method: RequestMethod[method as RequestMethod],
        path: `/${path.replace(/^\/+/, '')}`,
        role: reflector.getAllAndOverride<string | undefined>(REQUIRED_ROLE, [handler as never, controller]) ?? null,
        config: Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler),
      });
    }
  }
  return found;
}

/** A route's path with its parameters filled in: a UUID where one is named, else an id. */
function concretePath(path: string): string {
  return path.replace(/:(\w+)/g, (_match, name: string) => (/uuid/i.test(name) ? randomUUID() : '1'));
}
