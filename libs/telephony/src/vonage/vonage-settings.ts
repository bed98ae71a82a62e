import {
  CallControlCarrierSettings,
  callControlCarrierSettingsProblems,
  readCallControlCarrierSettings,
} from '../call-control-carrier-settings';

/** What a Vonage configuration's `settings` may say: the settings every call-control carrier shares. */
export type VonageSettings = CallControlCarrierSettings;

export function vonageSettingsProblems(settings: Record<string, unknown>): string[] {
  return callControlCarrierSettingsProblems('Vonage', settings);
}

export function readVonageSettings(settings: Record<string, unknown>): VonageSettings {
  return readCallControlCarrierSettings(settings);
}
