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
