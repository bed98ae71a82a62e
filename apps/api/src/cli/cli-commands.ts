import { CliCommand } from './cli-command';
import { bootstrapCommand } from './commands/bootstrap.command';
import { migrateCommand } from './commands/migrate.command';
import { secretsKeyCommand } from './commands/secrets-key.command';
import { seedDemoCommand } from './commands/seed-demo.command';

export const CLI_COMMANDS: readonly CliCommand[] = [migrateCommand, bootstrapCommand, seedDemoCommand, secretsKeyCommand];
