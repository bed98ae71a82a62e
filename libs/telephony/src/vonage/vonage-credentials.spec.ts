import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { vonageCredentialProblems, readVonageCredentials } from './vonage-credentials';
import { readVonageSettings, vonageSettingsProblems } from './vonage-settings';

const rsaPem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
const valid = { application_id: randomUUID(), private_key: rsaPem, signature_secret: 'sig-secret-0123456789' };

describe('vonageCredentialProblems', () => {
  it('accepts an application UUID, its RSA private key in PEM and a signature secret', () => {
    expect(vonageCredentialProblems(valid)).toEqual([]);
    expect(readVonageCredentials(valid)?.privateKey.asymmetricKeyType).toBe('rsa');
  });

  it('asks for credentials when there are none', () => {
    expect(vonageCredentialProblems(null)).toEqual(['credentials are required: application_id, private_key, signature_secret']);
  });

  it('names each missing field', () => {
    expect(vonageCredentialProblems({})).toEqual([
      'credentials.application_id is required (the Vonage application UUID)',
      "credentials.private_key is required (the application's PEM private key)",
      'credentials.signature_secret is required (the account signature secret, to verify webhooks)',
    ]);
  });

  it('rejects an application id that is not a UUID and a key that does not parse', () => {
    expect(vonageCredentialProblems({ ...valid, application_id: 'my-app', private_key: '-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----' })).toEqual([
      'credentials.application_id must be a UUID',
      'credentials.private_key must be a PEM-encoded RSA private key',
    ]);
  });

  it('rejects a key that parses but is not RSA', () => {
    const ed25519 = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

    expect(vonageCredentialProblems({ ...valid, private_key: ed25519 })).toEqual(['credentials.private_key must be a PEM-encoded RSA private key']);
  });

  it('rejects unknown fields', () => {
    expect(vonageCredentialProblems({ ...valid, api_secret: 'x' })).toEqual([
      'credentials.api_secret is not a Vonage credential (known: application_id, private_key, signature_secret)',
    ]);
  });

  it('rejects keys named like Object.prototype members as unknown fields', () => {
    expect(vonageCredentialProblems({ ...valid, toString: 'x', constructor: 'y' })).toEqual([
      'credentials.toString is not a Vonage credential (known: application_id, private_key, signature_secret)',
      'credentials.constructor is not a Vonage credential (known: application_id, private_key, signature_secret)',
    ]);
  });

  it('accepts a multi-line PEM private key with surrounding blank lines: only header values must be visible ASCII', () => {
    expect(vonageCredentialProblems({ ...valid, private_key: `\n${rsaPem}\r\n` })).toEqual([]);
  });
});

describe('vonageSettingsProblems', () => {
  it('accepts the four settings, and nothing else', () => {
    expect(vonageSettingsProblems({ answering_machine_detection: true, machine_action: 'hangup', record: true, agent_runtime_url: 'ws://127.0.0.1:8090/media' })).toEqual(
      [],
    );
    expect(vonageSettingsProblems({ machine_action: 'beep', ringing_timer: 30 })).toEqual([
      'settings.machine_action must be one of hangup, talk',
      'settings.ringing_timer is not a Vonage setting (known: answering_machine_detection, machine_action, record, agent_runtime_url)',
    ]);
  });

  it('reads the settings with their defaults', () => {
    expect(readVonageSettings({ record: true, agent_runtime_url: 'wss://a.example.com' })).toEqual({
      answeringMachineDetection: false,
      machineAction: 'hangup',
      record: true,
      agentRuntimeUrl: 'wss://a.example.com',
    });
  });
});
