import { CredentialsCheck } from './telephony-provider';

/** The answer before asking the carrier, when the credentials are not even well-formed; null when they are. */
export function malformedCredentialsCheck(problems: string[]): CredentialsCheck | null {
  return problems.length > 0 ? { ok: false, reason: 'invalid_credentials', message: problems.join('; ') } : null;
}

/** The carrier turned these credentials down. */
export function refusedCredentialsCheck(carrier: string, detail: string): CredentialsCheck {
  return { ok: false, reason: 'unauthorized', message: `${carrier} refused these credentials${detail}` };
}

/** An API error status that means the credentials are refused: any 4xx but 429 (which is only "slow down"). */
export function refusesCredentials(status: number): boolean {
  return status < 500 && status !== 429;
}
