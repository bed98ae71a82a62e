import {
  AnswerUrlCarrierSettings,
  answerUrlCarrierSettingsProblems,
  readAnswerUrlCarrierSettings,
} from '../answer-url-carrier-settings';

/** What a Twilio configuration's `settings` may say: the settings every answer-URL carrier shares. */
export type TwilioSettings = AnswerUrlCarrierSettings;

export function twilioSettingsProblems(settings: Record<string, unknown>): string[] {
  return answerUrlCarrierSettingsProblems('Twilio', settings);
}

export function readTwilioSettings(settings: Record<string, unknown>): TwilioSettings {
  return readAnswerUrlCarrierSettings(settings);
}
