import { LookupAddress } from 'node:dns';
import { AddressNotPublic, isPublicAddress, publicAddressLookup } from './public-address';

describe('isPublicAddress', () => {
  it.each([
    ['8.8.8.8', true],
    ['52.216.8.1', true],
    ['100.63.255.255', true],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['10.1.2.3', false],
    ['127.0.0.1', false],
    ['169.254.169.254', false],
    ['172.15.255.255', true],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['172.32.0.1', true],
    ['192.168.1.1', false],
    ['198.18.0.1', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['2600:1f18::1', true],
    ['2a05:d018::1', true],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fd00:ec2::254', false],
    ['ff02::1', false],
    ['2001:db8::1', false],
    ['2002:a00:1::', false],
    ['2001:0:4136:e378::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:8.8.8.8', true],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b::8.8.8.8', true],
    ['fe80::1%eth0', false],
    ['not an address', false],
  ])('%s: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('publicAddressLookup', () => {
  const resolving = (addresses: LookupAddress[]) =>
    publicAddressLookup((_host, callback) => callback(null, addresses));
  const lookUp = (lookup: ReturnType<typeof publicAddressLookup>, options: { all?: boolean; family?: number }) =>
    new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
      lookup('storage.example', options, (error, address, family) => resolve({ error, address, family })),
    );
  const PUBLIC: LookupAddress[] = [
    { address: '2600:1f18::1', family: 6 },
    { address: '52.216.8.1', family: 4 },
  ];

  it('answers every address, or the first of the family asked for, when all are public', async () => {
    expect(await lookUp(resolving(PUBLIC), { all: true })).toEqual({ error: null, address: PUBLIC, family: undefined });
    expect(await lookUp(resolving(PUBLIC), { family: 4 })).toEqual({ error: null, address: '52.216.8.1', family: 4 });
    expect(await lookUp(resolving(PUBLIC), {})).toEqual({ error: null, address: '2600:1f18::1', family: 6 });
  });

  it('refuses the name when any of its addresses is not public, whichever family is asked for', async () => {
    const mixed = resolving([...PUBLIC, { address: '10.0.0.7', family: 4 }]);

    const answer = await lookUp(mixed, { family: 6 });

    expect(answer.error).toBeInstanceOf(AddressNotPublic);
    expect(answer.error).toMatchObject({ code: 'EADDRNOTPUBLIC', message: 'refused to connect to storage.example: it does not resolve to a public address' });
  });

  it("passes the resolver's failure on, and says so when no address of the family is there", async () => {
    const failing = publicAddressLookup((_host, callback) => callback(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }), []));

    expect((await lookUp(failing, { all: true })).error).toMatchObject({ code: 'ENOTFOUND' });
    expect((await lookUp(resolving([{ address: '52.216.8.1', family: 4 }]), { family: 6 })).error).toMatchObject({ code: 'ENOTFOUND' });
  });
});
