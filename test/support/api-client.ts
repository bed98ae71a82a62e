export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string;
  /** Send the key as `Authorization: Bearer` instead of `X-API-Key`. */
  bearer?: boolean;
  headers?: Record<string, string>;
  /** A raw body, sent as is (for malformed-input tests). */
  raw?: string | Buffer;
}

/** A small HTTP client for the API under test: real requests over loopback. */
export class ApiClient {
  constructor(readonly baseUrl: string) {}

  get<T = any>(path: string, options: RequestOptions = {}) {
    return this.request<T>('GET', path, undefined, options);
  }
  post<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('POST', path, body, options);
  }
  put<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PUT', path, body, options);
  }
  patch<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PATCH', path, body, options);
  }
  delete<T = any>(path: string, options: RequestOptions = {}) {
    return this.request<T>('DELETE', path, undefined, options);
  }

  async request<T = any>(method: string, path: string, body: unknown, options: RequestOptions): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) {
      if (options.bearer) headers.authorization = `Bearer ${options.key}`;
      else headers['x-api-key'] = options.key;
    }
    let payload: string | Buffer | undefined;
    if (options.raw !== undefined) {
      payload = options.raw;
      headers['content-type'] ??= 'application/json';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    const url = /^https?:\/\//.test(path) ? path : `${this.baseUrl}${path}`;
    const response = await fetch(url, { method, headers, body: payload });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }
}
