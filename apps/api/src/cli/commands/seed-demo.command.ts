import { loadDatabaseUrl } from '@app/config';
import { CliCommand } from '../cli-command';
import { CliIo } from '../cli-io';
import { seedDemo } from '../demo/seed-demo';
import { formatJsonLine } from '../format-json-line';
import { parseFlags } from '../parse-flags';
import { withDataSource } from '../with-data-source';

/** Used by `npm start`: seeds the demo into an empty database, and says whether it did, as JSON. */
export const seedDemoCommand: CliCommand = {
  name: 'seed-demo',
  synopsis: '',
  summary: 'On a database without organizations, create a demo organization, key, sandbox carrier and agent (JSON)',
  async run(args: readonly string[], io: CliIo): Promise<void> {
    parseFlags(args, {});
    const seeded = await withDataSource(loadDatabaseUrl(), seedDemo);
    if (!seeded) {
      io.out(formatJsonLine({ seeded: false }));
      io.err('The database already has organizations: no demo was created.');
      return;
    }
    io.out(formatJsonLine({ seeded: true, ...seeded }));
  },
};
