export interface SandboxSettings {
  ringMs: number;
  talkMs: number;
}

export const SANDBOX_DEFAULTS: SandboxSettings = { ringMs: 1000, talkMs: 4000 };
const LIMITS = { ring_ms: 120_000, talk_ms: 3_600_000 };

export function sandboxSettingsProblems(settings: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [key, max] of Object.entries(LIMITS)) {
    const value = settings[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
      problems.push(`settings.${key} must be an integer from 0 to ${max}`);
    }
  }
  return problems;
}

export function readSandboxSettings(settings: Record<string, unknown>): SandboxSettings {
  return {
    ringMs: typeof settings.ring_ms === 'number' ? settings.ring_ms : SANDBOX_DEFAULTS.ringMs,
    talkMs: typeof settings.talk_ms === 'number' ? settings.talk_ms : SANDBOX_DEFAULTS.talkMs,
  };
}
