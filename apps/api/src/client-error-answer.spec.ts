import { clientErrorAnswer } from './create-api-app';

describe('clientErrorAnswer', () => {
  const parse = (answer: string) => ({
    head: answer.slice(0, answer.indexOf('\r\n\r\n')),
    body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)),
  });

  it('answers a request that did not arrive in time 408, with the error body and its exact length', () => {
    const { head, body } = parse(clientErrorAnswer({ code: 'ERR_HTTP_REQUEST_TIMEOUT' }));
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(body).toEqual({ statusCode: 408, code: 'request_timeout', message: 'The request did not arrive in time', request_id: expect.any(String) });
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(JSON.stringify(body))}`);
    expect(head).toContain('Connection: close');
  });

  it('answers any other client error 400, and headers too large 431', () => {
    expect(parse(clientErrorAnswer({ code: 'HPE_INVALID_METHOD' })).body).toMatchObject({ statusCode: 400, code: 'bad_request' });
    expect(parse(clientErrorAnswer({})).body).toMatchObject({ statusCode: 400, code: 'bad_request' });
    expect(parse(clientErrorAnswer({ code: 'HPE_HEADER_OVERFLOW' })).body).toMatchObject({ statusCode: 431, code: 'headers_too_large' });
  });
});
