import {
  CallControlCarrierSettings,
  callControlCarrierSettingsProblems,
  readCallControlCarrierSettings,
} from '../call-control-carrier-settings';

/** What a Telnyx configuration's `settings` may say: the settings every call-control carrier shares. */
export type TelnyxSettings = CallControlCarrierSettings;

export function telnyxSettingsProblems(settings: Record<string, unknown>): string[] {
  return callControlCarrierSettingsProblems('Telnyx', settings);
}

export function readTelnyxSettings(settings: Record<string, unknown>): TelnyxSettings {
  return readCallControlCarrierSettings(settings);
}
