import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CredentialsCipher } from './credentials-cipher';
import { StoredCredentialsCheck } from './stored-credentials-check';

describe('StoredCredentialsCheck', () => {
  const cipherOf = (key: Buffer) => new CredentialsCipher({ secretsKey: key });
  const ours = cipherOf(randomBytes(32));
  const another = cipherOf(randomBytes(32));
  const sealed = (cipher: CredentialsCipher, count: number) =>
    Array.from({ length: count }, (_, index) => ({ credentials_encrypted: cipher.encrypt({ account_sid: `AC${index}`, auth_token: 'secret' }) }));
  const checkOf = (rows: Array<{ credentials_encrypted: string }>) =>
    new StoredCredentialsCheck({ query: async () => rows } as unknown as DataSource, ours);

  let errors: jest.SpyInstance;
  beforeEach(() => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('says so when this key reads none of the stored credentials, naming neither key nor credentials', async () => {
    expect(await checkOf(sealed(another, 3)).check()).toEqual({ checked: 3, readable: 0 });
    expect(errors).toHaveBeenCalledTimes(1);
    const [fields, message] = errors.mock.calls[0];
    expect(fields).toEqual({ checked: 3 });
    expect(message).toMatch(/^SECRETS_KEY reads none of the carrier credentials stored most recently/);
    expect(JSON.stringify(errors.mock.calls)).not.toContain('secret');
  });

  it('says nothing when it reads some of them, or there are none', async () => {
    expect(await checkOf([...sealed(another, 2), ...sealed(ours, 1), { credentials_encrypted: 'v1.damaged' }]).check()).toEqual({ checked: 4, readable: 1 });
    expect(await checkOf([]).check()).toEqual({ checked: 0, readable: 0 });
    expect(errors).not.toHaveBeenCalled();
  });
});
