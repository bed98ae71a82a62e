import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { BlockList, isIP, isIPv4, isIPv6 } from 'node:net';
import type { Network } from '@app/config';

/**
 * Addresses a download from a host a webhook named is never connected to:
 * this machine, the private networks around it, link-local (the cloud
 * metadata endpoints), shared address space, and ranges reserved for
 * documentation, benchmarking, multicast and future use.
 */
const NOT_PUBLIC = new BlockList();
/** IPv6 prefixes that carry an IPv4 address in their last 32 bits: mapped (`::ffff:a.b.c.d`) and NAT64. */
const CARRIES_IPV4 = new BlockList();
CARRIES_IPV4.addSubnet('::ffff:0:0', 96, 'ipv6');
CARRIES_IPV4.addSubnet('64:ff9b::', 96, 'ipv6');
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 3],
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv4');
  // Node's BlockList judges a mapped IPv6 address by the IPv4 rules itself; NAT64 is spelled out.
  NOT_PUBLIC.addSubnet(`64:ff9b::${network}`, 96 + prefix, 'ipv6');
}
/** IPv6 is public only inside global unicast (2000::/3), and not in these parts of it. */
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');
for (const [network, prefix] of [
  ['2001::', 23], // IETF protocol assignments, Teredo among them (a tunnel to any IPv4 address)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (a tunnel to any IPv4 address)
  ['3fff::', 20], // documentation
] as const) {
  NOT_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/**
 * Whether `address` (an IP literal) is one a download from an untrusted host
 * may connect to. An IPv4 address inside IPv6 (mapped `::ffff:a.b.c.d`, or
 * the NAT64 prefix `64:ff9b::/96` that DNS64 answers with on IPv6-only
 * networks) is judged as that IPv4 address.
 */
export function isPublicAddress(address: string): boolean {
  if (isIPv4(address)) return !NOT_PUBLIC.check(address, 'ipv4');
  if (!isIPv6(address)) return false;
  return (GLOBAL_UNICAST.check(address, 'ipv6') || CARRIES_IPV4.check(address, 'ipv6')) && !NOT_PUBLIC.check(address, 'ipv6');
}

/** Networks as one list, for `publicAddressLookup`'s exceptions. */
export function networksOf(networks: readonly Network[]): BlockList {
  const list = new BlockList();
  for (const { address, prefix, family } of networks) list.addSubnet(address, prefix, family);
  return list;
}

/** Whether a download from an untrusted host may connect to the IP literal `address`: public, or inside `alsoAllowed`. */
export function isConnectableAddress(address: string, alsoAllowed?: BlockList): boolean {
  if (isPublicAddress(address)) return true;
  const family = isIP(address);
  return alsoAllowed !== undefined && family !== 0 && alsoAllowed.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * A connection refused because its host resolved to an address that is not
 * public. The message names the host only: which internal address a name
 * resolves to is not told to whoever named it.
 */
export class AddressNotPublic extends Error {
  readonly code = 'EADDRNOTPUBLIC';
  constructor(host: string) {
    super(`refused to connect to ${host}: it does not resolve to a public address`);
    this.name = 'AddressNotPublic';
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type Resolve = (host: string, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolve: Resolve = (host, callback) => dnsLookup(host, { all: true, verbatim: true }, callback);

/**
 * A `lookup` for a socket's connect options that answers only if every
 * address the name resolves to is public (or inside `alsoAllowed`, the
 * private networks an operator names): checked when the connection is
 * made, so a name re-pointed between a check and the connect (DNS
 * rebinding) is caught too. `resolve` is the system's resolver but in tests.
 */
export function publicAddressLookup(resolve: Resolve = systemResolve, alsoAllowed?: BlockList) {
  return (host: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    resolve(host, (error, found) => {
      if (error) return callback(error, []);
      const wanted = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
      const addresses = wanted === 0 ? found : found.filter((each) => each.family === wanted);
      if (addresses.length === 0) {
        const none = Object.assign(new Error(`no address for ${host}`), { code: 'ENOTFOUND' });
        return callback(none, []);
      }
      if (!found.every((each) => isConnectableAddress(each.address, alsoAllowed))) return callback(new AddressNotPublic(host), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
