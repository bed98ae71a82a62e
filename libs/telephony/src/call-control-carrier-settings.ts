import { carrierSettingsProblems } from './carrier-settings-problems';
import { machineActionOf } from './machine-action';

/**
 * What the `settings` of a carrier we steer with call-control requests
 * rather than an answer document of ours (Telnyx, Vonage) may say.
 */
export interface CallControlCarrierSettings {
  answeringMachineDetection: boolean;
  /** With detection on: hang up on a machine or let the agent speak. */
  machineAction: 'hangup' | 'talk';
  record: boolean;
  /** Overrides AGENT_RUNTIME_URL for this configuration; the stream URL is built from it. */
  agentRuntimeUrl?: string;
}

const MACHINE_ACTIONS = ['hangup', 'talk'];

export function callControlCarrierSettingsProblems(carrier: string, settings: Record<string, unknown>): string[] {
  return carrierSettingsProblems(carrier, settings, (action) =>
    MACHINE_ACTIONS.includes(action as string) ? null : `settings.machine_action must be one of ${MACHINE_ACTIONS.join(', ')}`,
  );
}

export function readCallControlCarrierSettings(settings: Record<string, unknown>): CallControlCarrierSettings {
  return {
    answeringMachineDetection: settings.answering_machine_detection === true,
    machineAction: machineActionOf(settings),
    record: settings.record === true,
    ...(typeof settings.agent_runtime_url === 'string' ? { agentRuntimeUrl: settings.agent_runtime_url } : {}),
  };
}
