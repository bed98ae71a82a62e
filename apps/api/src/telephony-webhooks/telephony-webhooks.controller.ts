import { Controller, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { RawBodyRequest } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { WebhookKind, WebhookRequest } from '@app/telephony';
import { TelephonyWebhooksService } from './telephony-webhooks.service';

const KINDS: readonly WebhookKind[] = ['answer', 'status', 'recording'];

/**
 * `/api/v1/telephony/{provider}/{answer|status|recording}/{run_id}`: the URLs
 * we give carriers for each call. Unsigned requests answer 401, forged or
 * replayed ones 403, before anything changes. The run id is handed on as
 * received: it is parsed after the signature headers are checked, so that a
 * malformed one tells an unsigned caller no more than any other.
 */
@ApiExcludeController()
@Controller('api/v1/telephony/:provider/:kind/:run_id')
export class TelephonyWebhooksController {
  constructor(
    private readonly webhooks: TelephonyWebhooksService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200)
  async receive(
    @Param('provider') provider: string,
    @Param('kind') kind: string,
    @Param('run_id') run: string,
    @Req() request: RawBodyRequest<FastifyRequest>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<string | { received: true }> {
    if (!KINDS.includes(kind as WebhookKind)) throw Errors.notFound('not_found', 'Unknown webhook');
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(',') : value;
    const webhook: WebhookRequest = {
      method: request.method,
      // Carriers sign the URL they called: our public base plus the path and query as received (in origin form:
      // see `originForm`).
      url: `${this.config.publicBaseUrl}${request.url}`,
      headers,
      rawBody: request.rawBody ?? Buffer.alloc(0),
    };
    const answer = await this.webhooks.receive(provider, kind as WebhookKind, run, webhook);
    if (!answer) return { received: true };
    void reply.header('content-type', answer.contentType);
    return answer.body;
  }
}
