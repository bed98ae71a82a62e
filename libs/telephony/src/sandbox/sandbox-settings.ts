export interface SandboxSettings {
  ringMs: number;
  talkMs: number;
  /** Fractions of dial requests answered "429 too many requests" / "503, not processed" / processed but never answered. */
  throttleRate: number;
  errorRate: number;
  timeoutRate: number;
  /** Whether the built-in agent takes answered calls (false: bring your own runtime to the session). */
  builtinAgent: boolean;
}

export const SANDBOX_DEFAULTS: SandboxSettings = {
  ringMs: 1000,
  talkMs: 4000,
  throttleRate: 0,
  errorRate: 0,
  timeoutRate: 0,
  builtinAgent: true,
};

const DURATIONS = { ring_ms: 120_000, talk_ms: 3_600_000 };
const RATES = ['throttle_rate', 'error_rate', 'timeout_rate'];

export function sandboxSettingsProblems(settings: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [key, max] of Object.entries(DURATIONS)) {
    const value = settings[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
      problems.push(`settings.${key} must be an integer from 0 to ${max}`);
    }
  }
  for (const key of RATES) {
    const value = settings[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !(value >= 0 && value <= 1)) problems.push(`settings.${key} must be a number from 0 to 1`);
  }
  if (settings.builtin_agent !== undefined && typeof settings.builtin_agent !== 'boolean') {
    problems.push('settings.builtin_agent must be true or false');
  }
  const known = new Set([...Object.keys(DURATIONS), ...RATES, 'builtin_agent']);
  for (const key of Object.keys(settings)) {
    if (!known.has(key)) problems.push(`settings.${key} is not a sandbox setting (known: ${[...known].join(', ')})`);
  }
  return problems;
}

export function readSandboxSettings(settings: Record<string, unknown>): SandboxSettings {
  const number = (key: string, fallback: number) => (typeof settings[key] === 'number' ? (settings[key] as number) : fallback);
  return {
    ringMs: number('ring_ms', SANDBOX_DEFAULTS.ringMs),
    talkMs: number('talk_ms', SANDBOX_DEFAULTS.talkMs),
    throttleRate: number('throttle_rate', 0),
    errorRate: number('error_rate', 0),
    timeoutRate: number('timeout_rate', 0),
    builtinAgent: settings.builtin_agent !== false,
  };
}
