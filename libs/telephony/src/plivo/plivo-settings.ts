import {
  AnswerUrlCarrierSettings,
  answerUrlCarrierSettingsProblems,
  readAnswerUrlCarrierSettings,
} from '../answer-url-carrier-settings';

/** What a Plivo configuration's `settings` may say: the settings every answer-URL carrier shares. */
export type PlivoSettings = AnswerUrlCarrierSettings;

export function plivoSettingsProblems(settings: Record<string, unknown>): string[] {
  return answerUrlCarrierSettingsProblems('Plivo', settings);
}

export function readPlivoSettings(settings: Record<string, unknown>): PlivoSettings {
  return readAnswerUrlCarrierSettings(settings);
}
