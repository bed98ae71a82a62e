/** The one error body every endpoint answers with. */
export interface ErrorBody {
  statusCode: number;
  code: string;
  message: string;
  request_id: string;
  details?: unknown;
}
