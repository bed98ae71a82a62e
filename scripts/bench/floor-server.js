'use strict';
// The framework floor of the bench: what NestJS on Fastify costs a request
// shaped like a trigger before the gateway does any work of its own. One
// controller, one POST route under the trigger's path, a guard that checks
// the X-API-Key header is there, the JSON body parsed and handed to the
// handler, a constant answer. No validation, database, queue or logging.
// Started by scripts/bench.js with the port as its argument.

require('reflect-metadata');
const { Body, Controller, Get, Headers: Header, HttpCode, Injectable, Module, Param, Post, UseGuards } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { FastifyAdapter } = require('@nestjs/platform-fastify');

class KeyPresentGuard {
  canActivate(context) {
    const request = context.switchToHttp().getRequest();
    return request.method === 'GET' || typeof request.headers['x-api-key'] === 'string';
  }
}
Injectable()(KeyPresentGuard);

class FloorController {
  initiate(uuid, body, apiKey) {
    // Touch what the real handler reads, so nothing is optimised away.
    return { status: 'initiated', workflow_run_id: uuid.length + apiKey.length, workflow_run_name: typeof body.phone_number };
  }

  /** For the bench to see the server up. */
  ready() {
    return { status: 'ok' };
  }
}
// The decorators TypeScript would apply, applied by hand (this file is plain JavaScript).
const method = Object.getOwnPropertyDescriptor(FloorController.prototype, 'initiate');
Param('uuid')(FloorController.prototype, 'initiate', 0);
Body()(FloorController.prototype, 'initiate', 1);
Header('x-api-key')(FloorController.prototype, 'initiate', 2);
Reflect.defineMetadata('design:paramtypes', [String, Object, String], FloorController.prototype, 'initiate');
Post(':uuid')(FloorController.prototype, 'initiate', method);
HttpCode(200)(FloorController.prototype, 'initiate', method);
Get('ready')(FloorController.prototype, 'ready', Object.getOwnPropertyDescriptor(FloorController.prototype, 'ready'));
UseGuards(KeyPresentGuard)(FloorController);
Controller('api/v1/public/agent')(FloorController);

class FloorModule {}
Module({ controllers: [FloorController], providers: [KeyPresentGuard] })(FloorModule);

async function main() {
  const app = await NestFactory.create(FloorModule, new FastifyAdapter(), { logger: false });
  await app.listen(Number(process.argv[2]), '127.0.0.1');
}

main().catch((error) => {
  process.stderr.write(`floor server failed: ${error.stack || error}\n`);
  process.exit(1);
});
