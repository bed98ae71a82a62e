import { CarrierError } from '../carrier-error';
import { headerCredentialProblem } from '../header-credential-problem';

/**
 * A Twilio account: the Account SID and its Auth Token. The Auth Token is
 * always needed, because Twilio signs its webhooks with it. An API key
 * (`api_key_sid` + `api_key_secret`, both or neither) is optional; when set,
 * REST requests authenticate with it instead of the Auth Token, so the token
 * can stay out of outbound traffic and a key can be revoked on its own.
 */
export interface TwilioCredentials {
  accountSid: string;
  authToken: string;
  apiKey: { sid: string; secret: string } | null;
}

const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/;
const AUTH_TOKEN = /^[0-9a-fA-F]{32}$/;
const API_KEY_SID = /^SK[0-9a-fA-F]{32}$/;
const KNOWN = ['account_sid', 'auth_token', 'api_key_sid', 'api_key_secret'];

export function twilioCredentialProblems(credentials: Record<string, unknown> | null): string[] {
  if (!credentials) return ['credentials are required: account_sid and auth_token'];
  const problems: string[] = [];
  const { account_sid: sid, auth_token: token, api_key_sid: keySid, api_key_secret: keySecret } = credentials;
  if (typeof sid !== 'string' || !ACCOUNT_SID.test(sid)) {
    problems.push('credentials.account_sid must be a Twilio Account SID: "AC" followed by 32 hexadecimal characters');
  }
  if (typeof token !== 'string' || !AUTH_TOKEN.test(token)) {
    problems.push('credentials.auth_token must be the account\'s Auth Token: 32 hexadecimal characters');
  }
  if (keySid !== undefined || keySecret !== undefined) {
    if (typeof keySid !== 'string' || !API_KEY_SID.test(keySid)) {
      problems.push('credentials.api_key_sid must be a Twilio API key SID: "SK" followed by 32 hexadecimal characters');
    }
    if (typeof keySecret !== 'string' || keySecret.trim() === '') {
      problems.push('credentials.api_key_secret must be the API key\'s secret (set both api_key_sid and api_key_secret, or neither)');
    } else {
      // The SIDs' and the Auth Token's patterns already keep them to visible ASCII; the secret's check does not.
      const headerProblem = headerCredentialProblem('api_key_secret', keySecret);
      if (headerProblem) problems.push(headerProblem);
    }
  }
  for (const key of Object.keys(credentials)) {
    if (!KNOWN.includes(key)) problems.push(`credentials.${key} is not a Twilio credential (known: ${KNOWN.join(', ')})`);
  }
  return problems;
}

/** Reads credentials already validated at configuration time; a bad shape here is permanent. */
export function readTwilioCredentials(credentials: Record<string, unknown> | null): TwilioCredentials {
  const problems = twilioCredentialProblems(credentials);
  if (problems.length > 0 || !credentials) {
    throw new CarrierError(`Twilio credentials are not usable: ${problems.join('; ')}`, {
      reason: 'invalid_credentials',
      permanent: true,
      notProcessed: true,
    });
  }
  return {
    accountSid: credentials.account_sid as string,
    authToken: credentials.auth_token as string,
    apiKey:
      typeof credentials.api_key_sid === 'string'
        ? { sid: credentials.api_key_sid, secret: credentials.api_key_secret as string }
        : null,
  };
}
