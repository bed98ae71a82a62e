import { bodyMediaTypeRefusal } from './body-media-type';

const withBody = (type: string, length = '12') => ({ 'content-type': type, 'content-length': length });

describe('bodyMediaTypeRefusal', () => {
  it('takes JSON bodies whatever the case and parameters of the type', () => {
    for (const type of ['application/json', 'APPLICATION/JSON', 'application/json; charset=utf-8', ' application/json ;x=1']) {
      expect(bodyMediaTypeRefusal('POST', '/api/v1/public/agent/x', withBody(type))).toBeNull();
    }
  });

  it('refuses form fields, text and other non-JSON bodies on JSON routes, naming JSON', () => {
    for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/xml', 'application/jsonx']) {
      expect(bodyMediaTypeRefusal('POST', '/api/v1/workflows', withBody(type))).toBe('Send the body as JSON, with Content-Type: application/json');
    }
  });

  it('refuses a chunked non-JSON body, whose length is not declared', () => {
    const headers = { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' };
    expect(bodyMediaTypeRefusal('PATCH', '/api/v1/triggers/x', headers)).not.toBeNull();
  });

  it('leaves a request without a body or without a type to the route', () => {
    expect(bodyMediaTypeRefusal('POST', '/api/v1/workflow/1/runs/2/cancel', withBody('text/plain', '0'))).toBeNull();
    expect(bodyMediaTypeRefusal('POST', '/api/v1/workflow/1/runs/2/cancel', { 'content-type': 'text/plain' })).toBeNull();
    expect(bodyMediaTypeRefusal('POST', '/api/v1/public/agent/x', { 'content-length': '12' })).toBeNull();
  });

  it('lets carrier callbacks post form fields', () => {
    expect(bodyMediaTypeRefusal('POST', '/api/v1/telephony/twilio/status/7', withBody('application/x-www-form-urlencoded'))).toBeNull();
  });

  it('takes audio only on the recording upload, and only by PUT', () => {
    expect(bodyMediaTypeRefusal('PUT', '/api/v1/agent-sessions/tok/recording', withBody('audio/wav'))).toBeNull();
    expect(bodyMediaTypeRefusal('PUT', '/api/v1/agent-sessions/tok/recording?x=1', withBody('audio/mpeg'))).toBeNull();
    expect(bodyMediaTypeRefusal('POST', '/api/v1/agent-sessions/tok/recording', withBody('audio/wav'))).toBe('Audio is accepted only by the recording upload');
    expect(bodyMediaTypeRefusal('POST', '/api/v1/telephony/twilio/status/7', withBody('audio/wav'))).toBe('Audio is accepted only by the recording upload');
    expect(bodyMediaTypeRefusal('PUT', '/api/v1/agent-sessions/tok/recording/x', withBody('Audio/WAV'))).toBe('Audio is accepted only by the recording upload');
  });
});

const TRIGGER = '/api/v1/public/agent/0b6f8d9e-4b8a-4a77-9a51-2f4c1f2b9e10';
const WITH_BODY = { 'content-length': '30' };

function refusalFor(type: string, url = TRIGGER, headers: Record<string, string> = WITH_BODY): string | null {
  return bodyMediaTypeRefusal('POST', url, { ...headers, 'content-type': type });
}

describe('bodyMediaTypeRefusal: the charset of a JSON body', () => {
  it.each([
    'application/json; charset=iso-8859-1',
    'application/json; charset=ISO-8859-1',
    'application/json; charset="iso-8859-1"',
    'application/json;charset=windows-1252',
    'application/json; charset=utf-16',
    'application/json; charset=""',
    'application/json; foo=bar; charset=latin1',
    'application/json; foo="a; b"; charset=latin1',
    'application/json; charset=utf-8; charset=latin1',
  ])('refuses a JSON body declared in a charset other than UTF-8: %s', (type) => {
    expect(refusalFor(type)).toMatch(/UTF-8/);
  });

  it.each([
    'application/json',
    'application/json;',
    'application/json; charset=utf-8',
    'application/json; charset=UTF-8',
    'application/json; charset=utf8',
    'application/json;charset=Utf-8',
    'application/json; charset="UTF-8"',
    'application/json; charset="utf\\-8"',
    'Application/JSON ; Charset=utf-8',
    'application/json; foo="a; charset=latin1"; charset=utf-8',
    'application/json; foo="say \\"charset=latin1\\""',
    'application/json; foo=bar',
  ])('takes a JSON body declared as %s', (type) => {
    expect(refusalFor(type)).toBeNull();
  });

  it('leaves a request without a body to the route, whatever charset it declares', () => {
    expect(refusalFor('application/json; charset=iso-8859-1', TRIGGER, {})).toBeNull();
  });

  it('leaves carrier callbacks to their signature check, whatever charset they declare', () => {
    expect(refusalFor('application/json; charset=iso-8859-1', '/api/v1/telephony/telnyx/events')).toBeNull();
  });

  it('still refuses a body that is not JSON, naming JSON', () => {
    expect(refusalFor('text/plain; charset=utf-8')).toBe('Send the body as JSON, with Content-Type: application/json');
  });
});
