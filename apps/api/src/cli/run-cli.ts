import { ConfigError, loadDatabaseUrl } from '@app/config';
import { CliCommand } from './cli-command';
import { CliFailure } from './cli-failure';
import { CliIo } from './cli-io';
import { CliUsageError } from './cli-usage-error';
import { explainDatabaseError } from './explain-database-error';
import { usageText } from './usage-text';

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Runs one command line and answers the process exit code; never throws. */
export async function runCli(argv: readonly string[], commands: readonly CliCommand[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === 'help' || name === '--help' || name === '-h') {
    io.out(usageText(commands));
    return EXIT_OK;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) {
    io.err(name === undefined ? 'No command given.' : `Unknown command "${name}".`);
    io.err(usageText(commands));
    return EXIT_USAGE;
  }
  try {
    await command.run(args, io);
    return EXIT_OK;
  } catch (error) {
    return reportFailure(command, explain(error, command), io);
  }
}

function explain(error: unknown, command: CliCommand): unknown {
  if (error instanceof CliUsageError || error instanceof ConfigError || error instanceof CliFailure) return error;
  // Only commands that got as far as the database fail otherwise, so the URL is valid here. A table missing while the
  // schema is being made is the migration's own failure, not a schema that was never made: its words are kept.
  return explainDatabaseError(error, loadDatabaseUrl(), { makesSchema: command.name === 'migrate' });
}

function reportFailure(command: CliCommand, error: unknown, io: CliIo): number {
  if (error instanceof CliUsageError) {
    io.err(`${command.name}: ${error.message}`);
    io.err(`Usage: npm run --silent cli -- ${command.name} ${command.synopsis}`.trimEnd());
    return EXIT_USAGE;
  }
  if (error instanceof ConfigError || error instanceof CliFailure) {
    io.err(`${command.name}: ${error.message}`);
    return EXIT_FAILURE;
  }
  io.err(`${command.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return EXIT_FAILURE;
}
