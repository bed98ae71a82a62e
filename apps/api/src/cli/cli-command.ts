import { CliIo } from './cli-io';

/** One verb of the CLI. `run` throws `CliUsageError` for bad arguments. */
export interface CliCommand {
  readonly name: string;
  /** The arguments after the command name, as shown in the usage text. */
  readonly synopsis: string;
  readonly summary: string;
  run(args: readonly string[], io: CliIo): Promise<void>;
}
