import { generateKeyPairSync } from 'node:crypto';
import { telnyxCredentialProblems } from './telnyx-credentials';
import { telnyxSettingsProblems, readTelnyxSettings } from './telnyx-settings';

const publicKey = (generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }) as Buffer)
  .subarray(-32)
  .toString('base64');
const valid = { api_key: 'KEY0123456789ABCDEF_abc', connection_id: '1293384261075731461', public_key: publicKey };

describe('telnyxCredentialProblems', () => {
  it('accepts an API key, a Call Control App id and a 32-byte Ed25519 public key', () => {
    expect(telnyxCredentialProblems(valid)).toEqual([]);
  });

  it('asks for credentials when there are none', () => {
    expect(telnyxCredentialProblems(null)).toEqual(['credentials are required: api_key, connection_id, public_key']);
  });

  it('names each missing or empty field', () => {
    expect(telnyxCredentialProblems({ api_key: '', public_key: publicKey })).toEqual([
      'credentials.api_key is required (a non-empty string)',
      'credentials.connection_id is required (a non-empty string)',
    ]);
  });

  it('rejects a public key that is not 32 bytes of base64', () => {
    expect(telnyxCredentialProblems({ ...valid, public_key: Buffer.alloc(31).toString('base64') })).toEqual([
      'credentials.public_key must be the base64 of a 32-byte Ed25519 public key',
    ]);
    expect(telnyxCredentialProblems({ ...valid, public_key: '-----BEGIN PUBLIC KEY-----' })).toHaveLength(1);
  });

  it('rejects keys with spaces and unknown fields', () => {
    expect(telnyxCredentialProblems({ ...valid, api_key: 'KEY 1', apiKey: 'KEY1' })).toEqual([
      'credentials.api_key must not contain spaces',
      'credentials.apiKey is not a Telnyx credential (known: api_key, connection_id, public_key)',
    ]);
  });

  it.each([
    ['NUL', 'KEY\u0000SECRET'],
    ['another control character', 'KEY\u001bSECRET'],
    ['DEL', 'KEY\u007fSECRET'],
    ['a letter beyond ASCII', 'KEYÉSECRET'],
  ])('rejects an API key with %s: it is sent as is in the Authorization header', (_, apiKey) => {
    expect(telnyxCredentialProblems({ ...valid, api_key: apiKey })).toEqual([
      'credentials.api_key must be visible ASCII characters only (no spaces or control characters): it is sent in an HTTP header',
    ]);
  });

  it('rejects keys named like Object.prototype members as unknown fields', () => {
    expect(telnyxCredentialProblems({ ...valid, toString: 'x', constructor: 'y' })).toEqual([
      'credentials.toString is not a Telnyx credential (known: api_key, connection_id, public_key)',
      'credentials.constructor is not a Telnyx credential (known: api_key, connection_id, public_key)',
    ]);
  });
});

describe('telnyxSettingsProblems', () => {
  it('accepts the four settings', () => {
    expect(
      telnyxSettingsProblems({
        answering_machine_detection: true,
        machine_action: 'talk',
        record: false,
        agent_runtime_url: 'wss://agents.example.com/media',
      }),
    ).toEqual([]);
    expect(telnyxSettingsProblems({})).toEqual([]);
  });

  it('rejects wrong types, values and unknown keys', () => {
    expect(
      telnyxSettingsProblems({
        answering_machine_detection: 'yes',
        machine_action: 'voicemail',
        record: 1,
        agent_runtime_url: 'https://agents.example.com',
        ring_ms: 10,
      }),
    ).toEqual([
      'settings.answering_machine_detection must be true or false',
      'settings.record must be true or false',
      'settings.machine_action must be one of hangup, talk',
      'settings.agent_runtime_url must be a ws:// or wss:// URL',
      'settings.ring_ms is not a Telnyx setting (known: answering_machine_detection, machine_action, record, agent_runtime_url)',
    ]);
  });

  it('defaults to no detection, hanging up on machines, no recording', () => {
    expect(readTelnyxSettings({})).toEqual({ answeringMachineDetection: false, machineAction: 'hangup', record: false });
  });
});
