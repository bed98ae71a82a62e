/** What a Telnyx configuration's `settings` may say. */
export interface TelnyxSettings {
  answeringMachineDetection: boolean;
  /** With detection on: hang up on a machine (the dialer does it) or let the agent speak. */
  machineAction: 'hangup' | 'talk';
  record: boolean;
  /** Overrides AGENT_RUNTIME_URL for this configuration; the dialer builds the stream URL from it. */
  agentRuntimeUrl?: string;
}

const MACHINE_ACTIONS = ['hangup', 'talk'];
const KNOWN = ['answering_machine_detection', 'machine_action', 'record', 'agent_runtime_url'];

export function telnyxSettingsProblems(settings: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of ['answering_machine_detection', 'record']) {
    if (settings[key] !== undefined && typeof settings[key] !== 'boolean') problems.push(`settings.${key} must be true or false`);
  }
  const action = settings.machine_action;
  if (action !== undefined && !MACHINE_ACTIONS.includes(action as string)) {
    problems.push(`settings.machine_action must be one of ${MACHINE_ACTIONS.join(', ')}`);
  }
  const runtime = settings.agent_runtime_url;
  if (runtime !== undefined && !isWebSocketUrl(runtime)) problems.push('settings.agent_runtime_url must be a ws:// or wss:// URL');
  for (const key of Object.keys(settings)) {
    if (!KNOWN.includes(key)) problems.push(`settings.${key} is not a Telnyx setting (known: ${KNOWN.join(', ')})`);
  }
  return problems;
}

export function readTelnyxSettings(settings: Record<string, unknown>): TelnyxSettings {
  return {
    answeringMachineDetection: settings.answering_machine_detection === true,
    machineAction: settings.machine_action === 'talk' ? 'talk' : 'hangup',
    record: settings.record === true,
    ...(typeof settings.agent_runtime_url === 'string' ? { agentRuntimeUrl: settings.agent_runtime_url } : {}),
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
