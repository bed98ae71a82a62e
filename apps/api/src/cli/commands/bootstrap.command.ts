import { loadDatabaseUrl } from '@app/config';
import { bootstrapOrganization } from '../../organizations/bootstrap-organization';
import { CliCommand } from '../cli-command';
import { CliIo } from '../cli-io';
import { CliUsageError } from '../cli-usage-error';
import { formatJsonLine } from '../format-json-line';
import { parseFlags } from '../parse-flags';
import { withDataSource } from '../with-data-source';

const MAX_NAME_LENGTH = 200;

/** Creates an organization and its first admin key, shown once. */
export const bootstrapCommand: CliCommand = {
  name: 'bootstrap',
  synopsis: '--org <name> [--json]',
  summary: 'Create an organization and print its first admin API key (shown once)',
  async run(args: readonly string[], io: CliIo): Promise<void> {
    const flags = parseFlags(args, { org: 'string', json: 'boolean' });
    const name = flags.org?.trim();
    if (!name) throw new CliUsageError('--org <name> is required');
    if (name.length > MAX_NAME_LENGTH) throw new CliUsageError(`--org must be at most ${MAX_NAME_LENGTH} characters`);

    const created = await withDataSource(loadDatabaseUrl(), (dataSource) => bootstrapOrganization(dataSource, name));
    if (flags.json) {
      io.out(formatJsonLine({ organization_id: created.organization_id, api_key: created.api_key }));
      io.err('Keep the api_key: it is shown only once.');
      return;
    }
    io.out(`Created organization "${name}" (id ${created.organization_id}) with an admin API key, shown only this once:`);
    io.out(created.api_key);
  },
};
