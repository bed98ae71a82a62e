import {
  AnswerUrlCarrierSettings,
  answerUrlCarrierSettingsProblems,
  readAnswerUrlCarrierSettings,
} from '../answer-url-carrier-settings';

/** What a Twilio configuration's `settings` may say: the settings every answer-URL carrier shares. */
export type TwilioSettings = AnswerUrlCarrierSettings;

export function twilioSettingsProblems(settings: Record<string, unknown>): string[] {
  const problems = answerUrlCarrierSettingsProblems('Twilio', settings);
  // Twilio's Media Streams connect to wss:// only (its error 31922): a ws:// runtime would get no call's audio.
  if (typeof settings.agent_runtime_url === 'string' && URL.parse(settings.agent_runtime_url)?.protocol === 'ws:') {
    problems.push('settings.agent_runtime_url must be a wss:// URL: Twilio streams calls to wss:// only');
  }
  return problems;
}

export function readTwilioSettings(settings: Record<string, unknown>): TwilioSettings {
  return readAnswerUrlCarrierSettings(settings);
}
