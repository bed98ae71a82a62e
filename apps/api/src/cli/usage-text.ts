import { CliCommand } from './cli-command';

export function usageText(commands: readonly CliCommand[]): string {
  const width = Math.max(...commands.map((command) => `${command.name} ${command.synopsis}`.length));
  const lines = commands.map((command) => `  ${`${command.name} ${command.synopsis}`.padEnd(width)}  ${command.summary}`);
  return [
    'Usage: npm run --silent cli -- <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Reads DATABASE_URL (default postgres://postgres@127.0.0.1:5432/voice_agent); no secrets key needed.',
  ].join('\n');
}
