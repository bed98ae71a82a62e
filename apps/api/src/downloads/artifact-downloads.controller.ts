import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { ARTIFACT_STORAGE, ArtifactStorage, DownloadTokens } from '@app/artifacts';
import { DomainError, Errors } from '@app/common';
import { WorkflowRun } from '@app/persistence';
import { ApiErrors } from '../openapi-docs';
import { requestedRange } from './byte-range';
import { conditionalAnswer } from './conditional-request';

const DOWNLOAD_ERRORS = ApiErrors({
  403: '`download_token_invalid`: the link was tampered with',
  404: '`artifact_not_found`: the artifact is gone from storage',
  410: '`download_expired`',
  412: '`precondition_failed`: an `If-Match` that names another copy',
  416: '`range_not_satisfiable`: a `Range` starting past the end',
  503: '`service_unavailable` with `Retry-After: 1`: the database is away, or storage cannot serve now (full disk, out of file handles)',
});

/**
 * The public end of a download link: no headers needed, the signed token is
 * the permission. Tampered tokens answer 403, expired ones 410. One range of
 * bytes is answered in part (206), so players can seek a recording (Safari
 * and iOS play audio only so) and a download cut short can resume.
 */
@ApiTags('downloads')
@Controller('api/v1/downloads')
export class ArtifactDownloadsController {
  constructor(
    private readonly tokens: DownloadTokens,
    private readonly dataSource: DataSource,
    @Inject(ARTIFACT_STORAGE) private readonly storage: ArtifactStorage,
  ) {}

  @Get(':payload/:signature')
  @ApiOperation({ operationId: 'downloadArtifact', summary: 'Download a recording or transcript by signed link' })
  @DOWNLOAD_ERRORS
  async download(
    @Param('payload') payload: string,
    @Param('signature') signature: string,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    await this.send(`${payload}.${signature}`, reply);
  }

  /** Links of the one-segment form `<payload>.<signature>`, as first issued. */
  @Get(':token')
  @ApiOperation({ operationId: 'downloadArtifactByToken', summary: 'Download a recording or transcript by signed link' })
  @DOWNLOAD_ERRORS
  async downloadByToken(@Param('token') token: string, @Res() reply: FastifyReply): Promise<void> {
    await this.send(token, reply);
  }

  private async send(token: string, reply: FastifyReply): Promise<void> {
    const check = this.tokens.verify(token);
    if (!check.ok) {
      throw check.reason === 'expired'
        ? new DomainError(410, 'download_expired', 'This download link has expired; ask for a new one')
        : new DomainError(403, 'download_token_invalid', 'This download link is not valid');
    }
    const { runId, artifact } = check.grant;
    const run = await this.dataSource
      .getRepository(WorkflowRun)
      .findOne({ where: { id: runId }, select: { id: true, name: true, recordingKey: true, transcriptKey: true } });
    const key = artifact === 'recording' ? run?.recordingKey : run?.transcriptKey;
    const stored = key ? await this.storage.get(key) : null;
    if (!run || !key || !stored) throw Errors.notFound('artifact_not_found', 'The artifact no longer exists');
    const extension = key.slice(key.lastIndexOf('.'));
    // What is stored under a key never changes (a new recording is a new key): the key names this copy.
    const etag = `"${createHash('sha256').update(key).digest('base64url').slice(0, 27)}"`;
    const { headers } = reply.request;
    const ifRange = headers['if-range'];
    // A HEAD answers as a GET without Range would: range handling is defined for GET alone (RFC 9110, 14.2).
    const head = reply.request.method === 'HEAD';
    const asked = head ? { kind: 'whole' as const } : requestedRange(headers.range, joined(ifRange), etag, stored.size);
    void reply.header('accept-ranges', 'bytes').header('etag', etag).header('cache-control', 'private, no-store');
    const condition = conditionalAnswer(joined(headers['if-match']), joined(headers['if-none-match']), etag);
    if (condition === 'precondition_failed') {
      await stored.close();
      throw new DomainError(412, 'precondition_failed', 'If-Match names no copy of this artifact');
    }
    if (condition === 'not_modified') {
      // The copy the client holds is this one: nothing more is sent (RFC 9110, 15.4.5).
      await stored.close();
      await reply.status(304).send();
      return;
    }
    if (asked.kind === 'unsatisfiable') {
      await stored.close();
      void reply.header('content-range', `bytes */${stored.size}`);
      throw new DomainError(416, 'range_not_satisfiable', `The range asked for is not within the artifact's ${stored.size} bytes`);
    }
    const range = asked.kind === 'partial' ? asked.range : undefined;
    if (range) void reply.status(206).header('content-range', `bytes ${range.start}-${range.end}/${stored.size}`);
    // A HEAD (which Fastify routes here too) answers the GET's headers without reading the file: Fastify would read a
    // stream to its end only to drop it, up to 100 MiB a request.
    if (head) await stored.close();
    await reply
      .header('content-type', stored.contentType)
      .header('content-length', range ? range.end - range.start + 1 : stored.size)
      .header('content-disposition', `attachment; filename="${run.name}-${artifact}${extension}"`)
      .send(head ? Readable.from([]) : stored.read(range));
  }
}

/** A header Node gives as a list when it came more than once, as one field (RFC 9110, 5.3). */
function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
