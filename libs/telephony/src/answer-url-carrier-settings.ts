import { carrierSettingsProblems } from './carrier-settings-problems';
import { machineActionOf } from './machine-action';

/** What the `settings` of a carrier that answers through our answer URL (Twilio, Plivo) may say. */
export interface AnswerUrlCarrierSettings {
  /** Run the carrier's answering-machine detection and report who answered. */
  answeringMachineDetection: boolean;
  /** On a machine: hang up at once, or let the agent speak after the greeting (leave a voicemail). */
  machineAction: 'hangup' | 'talk';
  /** Have the carrier record the whole call; the recording is fetched into our storage. */
  record: boolean;
  /** Overrides AGENT_RUNTIME_URL for this configuration (read by the API, validated here). */
  agentRuntimeUrl: string | null;
}

export function answerUrlCarrierSettingsProblems(carrier: string, settings: Record<string, unknown>): string[] {
  return carrierSettingsProblems(carrier, settings, (action, all) => {
    if (action !== 'hangup' && action !== 'talk') {
      return 'settings.machine_action must be "hangup" (end the call on a machine) or "talk" (let the agent leave a message)';
    }
    return all.answering_machine_detection !== true ? 'settings.machine_action needs settings.answering_machine_detection set to true' : null;
  });
}

export function readAnswerUrlCarrierSettings(settings: Record<string, unknown>): AnswerUrlCarrierSettings {
  return {
    answeringMachineDetection: settings.answering_machine_detection === true,
    machineAction: machineActionOf(settings),
    record: settings.record === true,
    agentRuntimeUrl: typeof settings.agent_runtime_url === 'string' ? settings.agent_runtime_url : null,
  };
}
