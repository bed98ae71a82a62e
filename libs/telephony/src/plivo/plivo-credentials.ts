import { CarrierError } from '../carrier-error';
import { headerCredentialProblem } from '../header-credential-problem';

/**
 * A Plivo account or subaccount: its Auth ID and Auth Token. The same pair
 * authenticates REST requests (HTTP Basic) and signs Plivo's webhooks
 * (X-Plivo-Signature-V3 is made with the token of the account or subaccount
 * the call belongs to).
 */
export interface PlivoCredentials {
  authId: string;
  authToken: string;
}

/** Main accounts' Auth IDs start with MA, subaccounts' with SA; 20 characters in all. */
const AUTH_ID = /^(MA|SA)[A-Z0-9]{18}$/;
const AUTH_TOKEN = /^\S{20,}$/;
const KNOWN = ['auth_id', 'auth_token'];

export function plivoCredentialProblems(credentials: Record<string, unknown> | null): string[] {
  if (!credentials) return ['credentials are required: auth_id and auth_token'];
  const problems: string[] = [];
  if (typeof credentials.auth_id !== 'string' || !AUTH_ID.test(credentials.auth_id)) {
    problems.push('credentials.auth_id must be a Plivo Auth ID: "MA" or "SA" followed by 18 capital letters or digits');
  }
  const token = credentials.auth_token;
  if (typeof token !== 'string' || !AUTH_TOKEN.test(token)) {
    problems.push('credentials.auth_token must be the Auth Token shown with the Auth ID (at least 20 characters, no spaces)');
  } else {
    // The Auth ID's pattern already keeps it to visible ASCII; the token's only excludes spaces.
    const headerProblem = headerCredentialProblem('auth_token', token);
    if (headerProblem) problems.push(headerProblem);
  }
  for (const key of Object.keys(credentials)) {
    if (!KNOWN.includes(key)) problems.push(`credentials.${key} is not a Plivo credential (known: ${KNOWN.join(', ')})`);
  }
  return problems;
}

/** Reads credentials already validated at configuration time; a bad shape here is permanent. */
export function readPlivoCredentials(credentials: Record<string, unknown> | null): PlivoCredentials {
  const problems = plivoCredentialProblems(credentials);
  if (problems.length > 0 || !credentials) {
    throw new CarrierError(`Plivo credentials are not usable: ${problems.join('; ')}`, {
      reason: 'invalid_credentials',
      permanent: true,
      notProcessed: true,
    });
  }
  return { authId: credentials.auth_id as string, authToken: credentials.auth_token as string };
}
