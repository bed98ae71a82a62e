import { CliUsageError } from './cli-usage-error';
import { parseFlags } from './parse-flags';

describe('parseFlags', () => {
  const spec = { org: 'string', json: 'boolean' } as const;

  it('reads a string flag in either form and a boolean flag', () => {
    expect(parseFlags(['--org', 'Acme', '--json'], spec)).toEqual({ org: 'Acme', json: true });
    expect(parseFlags(['--org=Acme Inc', '--json'], spec)).toEqual({ org: 'Acme Inc', json: true });
    expect(parseFlags(['--org=--json'], spec)).toEqual({ org: '--json' });
  });

  it.each([
    [['--name', 'x'], 'unknown option --name'],
    [['--constructor', 'x'], 'unknown option --constructor'],
    [['--to-string'], 'unknown option --to-string'],
    [['--org', 'A', '--org', 'B'], '--org is given twice'],
    [['--json', '--json'], '--json is given twice'],
    [['--org'], '--org needs a value'],
    [['--org', '--json'], '--org needs a value'],
    [['--json=yes'], '--json takes no value'],
    [['Acme'], 'unexpected argument "Acme"'],
  ])('refuses %j: %s', (args, message) => {
    expect(() => parseFlags(args, spec)).toThrow(new CliUsageError(message));
  });
});
