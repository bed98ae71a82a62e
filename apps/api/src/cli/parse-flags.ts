import { CliUsageError } from './cli-usage-error';

export type FlagSpec = Record<string, 'string' | 'boolean'>;
export type ParsedFlags<S extends FlagSpec> = {
  [K in keyof S]?: S[K] extends 'string' ? string : boolean;
};

/**
 * Reads `--name value`, `--name=value` and boolean `--name` flags; anything
 * else (an unknown flag, a missing value, a flag given twice, a stray
 * argument) is a usage error.
 */
export function parseFlags<S extends FlagSpec>(args: readonly string[], spec: S): ParsedFlags<S> {
  const flags: Record<string, string | boolean> = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const match = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(arg);
    if (!match) throw new CliUsageError(`unexpected argument "${arg}"`);
    const [, name, inline] = match;
    // Own keys only: `--constructor` is no flag of any command.
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (!kind) throw new CliUsageError(`unknown option --${name}`);
    // Which of two values was meant is not for this to guess.
    if (Object.hasOwn(flags, name)) throw new CliUsageError(`--${name} is given twice`);
    if (kind === 'boolean') {
      if (inline !== undefined) throw new CliUsageError(`--${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const value = inline ?? args[++index];
    if (value === undefined || (inline === undefined && value.startsWith('--'))) {
      throw new CliUsageError(`--${name} needs a value`);
    }
    flags[name] = value;
  }
  return flags as ParsedFlags<S>;
}
