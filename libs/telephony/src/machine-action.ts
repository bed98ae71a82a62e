/**
 * What a configuration does on a machine: `machine_action` may be left out
 * (the API takes `answering_machine_detection: true` alone), and every
 * carrier then hangs up, as its dial or answer document asks for.
 */
export function machineActionOf(settings: Record<string, unknown>): 'hangup' | 'talk' {
  return settings.machine_action === 'talk' ? 'talk' : 'hangup';
}

/**
 * Whether a configuration has its calls hung up when a machine answers:
 * detection on and an action that is not `talk`. The API (no agent for such
 * a call) and the dialer (its hang-up, no wait for an agent report) decide
 * it as the carriers do, so none waits for an agent the carrier never connects.
 */
export function hangsUpOnMachines(settings: Record<string, unknown>): boolean {
  return settings.answering_machine_detection === true && machineActionOf(settings) === 'hangup';
}
