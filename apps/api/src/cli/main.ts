import 'reflect-metadata';
import { CLI_COMMANDS } from './cli-commands';
import { CliIo } from './cli-io';
import { runCli } from './run-cli';

const processIo: CliIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

// exitCode rather than exit(): stdout is flushed before the process ends.
runCli(process.argv.slice(2), CLI_COMMANDS, processIo).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`cli crashed: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
