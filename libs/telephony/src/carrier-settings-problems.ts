const KNOWN = ['answering_machine_detection', 'machine_action', 'record', 'agent_runtime_url'];

/**
 * The checks every real carrier's `settings` share, in the order the problems
 * are reported: the two switches, `machine_action` (whose rule is the
 * carrier family's own), the agent runtime URL, and no unknown keys.
 */
export function carrierSettingsProblems(
  carrier: string,
  settings: Record<string, unknown>,
  machineActionProblem: (action: unknown, settings: Record<string, unknown>) => string | null,
): string[] {
  const problems: string[] = [];
  for (const key of ['answering_machine_detection', 'record']) {
    if (settings[key] !== undefined && typeof settings[key] !== 'boolean') problems.push(`settings.${key} must be true or false`);
  }
  const action = settings.machine_action;
  const actionProblem = action === undefined ? null : machineActionProblem(action, settings);
  if (actionProblem) problems.push(actionProblem);
  const url = settings.agent_runtime_url;
  if (url !== undefined && !isWebSocketUrl(url)) {
    problems.push('settings.agent_runtime_url must be a ws:// or wss:// URL');
  }
  for (const key of Object.keys(settings)) {
    if (!KNOWN.includes(key)) problems.push(`settings.${key} is not a ${carrier} setting (known: ${KNOWN.join(', ')})`);
  }
  return problems;
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
