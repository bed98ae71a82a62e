import { applyDecorators } from '@nestjs/common';
import { ApiParam, ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';

/** The one error body every endpoint answers with (`ErrorBody` in libs/common), as the OpenAPI document shows it. */
export class ErrorBodyView {
  @ApiProperty({ type: 'integer', example: 404 }) statusCode: number;
  @ApiProperty({ description: 'Stable, machine-readable: branch on it', example: 'run_not_found' }) code: string;
  @ApiProperty({ example: 'No run with this id belongs to this workflow' }) message: string;
  @ApiProperty({ description: 'Also sent as X-Request-Id; quote it when asking about a request' }) request_id: string;
  @ApiPropertyOptional({ description: 'Per-field problems of a 400 validation_failed, or the failing dependency of a 503' })
  details?: unknown;
}

/** A numeric id in the path: an integer, whatever type the handler's parameter has. */
export function ApiIdParam(name: string, description: string): MethodDecorator {
  return ApiParam({ name, type: 'integer', description });
}

/** The 400 of every operation with a numeric id in its path (`ParseIdPipe`), with what else its 400 may say. */
export function badId(also?: string): string {
  return `\`validation_failed\`: an id in the path that is not a positive integer${also ? `; ${also}` : ''}`;
}

/** The error answers an operation documents, each with the error body. */
export function ApiErrors(answers: Record<number, string>): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...Object.entries(answers).map(([status, description]) => ApiResponse({ status: Number(status), description, type: ErrorBodyView })),
  );
}
