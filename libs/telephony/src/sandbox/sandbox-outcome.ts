/** What the sandbox carrier does with a call, chosen by the dialed number's last four digits. */
export type SandboxOutcome = 'answer' | 'busy' | 'no_answer' | 'carrier_failure' | 'reject_dial';

const BY_SUFFIX: Record<string, SandboxOutcome> = {
  '0001': 'busy',
  '0002': 'no_answer',
  '0003': 'carrier_failure',
  '0004': 'reject_dial',
};

export function sandboxOutcomeFor(phoneNumber: string): SandboxOutcome {
  return BY_SUFFIX[phoneNumber.slice(-4)] ?? 'answer';
}
