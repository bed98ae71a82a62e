import { randomBytes } from 'node:crypto';
import { isAllZero, newSecretsKey, parseSecretsKey } from './secrets-key';

describe('parseSecretsKey', () => {
  const key = randomBytes(32);

  it('takes 32 bytes as hex, or as base64 in either alphabet, padded or not, around blanks and a newline', () => {
    for (const written of [
      key.toString('hex'),
      key.toString('hex').toUpperCase(),
      key.toString('base64'),
      key.toString('base64').replace(/=$/, ''),
      key.toString('base64url'),
      // As Python's urlsafe_b64encode and Java's URL encoder write it: padded.
      `${key.toString('base64url')}=`,
      `  ${key.toString('hex')}\n`,
    ]) {
      expect({ written, parsed: parseSecretsKey(written) }).toEqual({ written, parsed: { ok: true, key } });
    }
    expect(parseSecretsKey(newSecretsKey())).toMatchObject({ ok: true });
  });

  it('refuses text that is not a key written so, though Node would decode it to 32 bytes, and never repeats it', () => {
    const passphrases = ['a'.repeat(43), 'hunter2hunter2hunter2hunter2hunter2hunter2h', 'correct-horse-battery-staple-correct-horse1'];
    // Node's own decoder takes each of these for 32 bytes.
    for (const raw of passphrases) expect(Buffer.from(raw, 'base64')).toHaveLength(32);
    for (const raw of [...passphrases, 'short', key.toString('hex').slice(1), `${key.toString('base64')}x`, `${key.toString('hex')} 0`]) {
      const parsed = parseSecretsKey(raw);
      expect({ raw, ok: parsed.ok }).toEqual({ raw, ok: false });
      if (!parsed.ok) expect(parsed.problem).not.toContain(raw.trim());
    }
  });

  it('refuses a repeated pattern as not drawn at random, but takes the all-zero key (judged by where it runs)', () => {
    for (const pattern of ['11'.repeat(32), 'ab'.repeat(32), '0123456789abcdef'.repeat(4)]) {
      expect(parseSecretsKey(pattern)).toEqual({ ok: false, problem: expect.stringContaining('does not look random') });
    }
    const zero = parseSecretsKey('0'.repeat(64));
    expect(zero.ok && isAllZero(zero.key)).toBe(true);
  });
});
