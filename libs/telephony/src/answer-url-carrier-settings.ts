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

const KNOWN = ['answering_machine_detection', 'machine_action', 'record', 'agent_runtime_url'];

export function answerUrlCarrierSettingsProblems(carrier: string, settings: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of ['answering_machine_detection', 'record']) {
    if (settings[key] !== undefined && typeof settings[key] !== 'boolean') problems.push(`settings.${key} must be true or false`);
  }
  const action = settings.machine_action;
  if (action !== undefined) {
    if (action !== 'hangup' && action !== 'talk') {
      problems.push('settings.machine_action must be "hangup" (end the call on a machine) or "talk" (let the agent leave a message)');
    } else if (settings.answering_machine_detection !== true) {
      problems.push('settings.machine_action needs settings.answering_machine_detection set to true');
    }
  }
  const url = settings.agent_runtime_url;
  if (url !== undefined && !isWebSocketUrl(url)) {
    problems.push('settings.agent_runtime_url must be a ws:// or wss:// URL');
  }
  for (const key of Object.keys(settings)) {
    if (!KNOWN.includes(key)) problems.push(`settings.${key} is not a ${carrier} setting (known: ${KNOWN.join(', ')})`);
  }
  return problems;
}

export function readAnswerUrlCarrierSettings(settings: Record<string, unknown>): AnswerUrlCarrierSettings {
  return {
    answeringMachineDetection: settings.answering_machine_detection === true,
    machineAction: settings.machine_action === 'talk' ? 'talk' : 'hangup',
    record: settings.record === true,
    agentRuntimeUrl: typeof settings.agent_runtime_url === 'string' ? settings.agent_runtime_url : null,
  };
}

function isWebSocketUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'ws:' || url.protocol === 'wss:') && url.hostname !== '';
  } catch {
    return false;
  }
}
