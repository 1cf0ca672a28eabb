/**
 * The names a page server answers to (`net serve`, `queue-process --listen`; its own module so that server.ts stays
 * the server): a request whose Host header names anything else is refused, so that a web page using DNS rebinding (a
 * name of the attacker's that comes to resolve to 127.0.0.1) cannot read the page's API from the
 * operator's own browser. The name decides, not the port: a browser may reach the server through
 * an ssh tunnel or a proxy on another port, and a port in Host is nothing a rebinding page can use.
 */
import net from 'node:net';

/** Names that always reach this machine's loopback, whatever DNS says (a browser never asks DNS for them). */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/** Addresses that mean "every address of this machine": no browser reaches the server by them. */
const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** A name as compared: lowercase, without the brackets of an IPv6 address or a trailing dot. */
export function hostName(name: string): string {
  const n = name.trim().toLowerCase();
  const bare = n.startsWith('[') && n.endsWith(']') ? n.slice(1, -1) : n;
  return bare.endsWith('.') ? bare.slice(0, -1) : bare;
}

/**
 * Why a name cannot be given to --allow-host (allowHosts), or undefined when it can: a host name or
 * an IP address, without a port or a scheme.
 */
export function badAllowedHost(name: string): string | undefined {
  const n = hostName(name);
  if (net.isIP(n) !== 0) return undefined;
  if (/^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/.test(n) && n.length <= 253)
    return undefined;
  return `'${name}' is not a host name or an IP address (give the name alone, without a port or scheme)`;
}

/**
 * The name in a Host header, or undefined when the header is not `NAME`, `NAME:PORT`, `[IPV6]` or
 * `[IPV6]:PORT` (so nothing like `a@b` or an unbracketed IPv6 address passes as some other name).
 */
export function nameInHost(header: string): string | undefined {
  const m = /^(?:\[([0-9a-f:.]+)\]|([^:[\]@/\\\s]+))(?::[0-9]{1,5})?$/i.exec(header);
  if (!m) return undefined;
  const name = hostName(m[1] ?? m[2]!);
  return name === '' ? undefined : name;
}

/**
 * The test a request's Host header must pass: the server's own address (or the name it was told
 * to bind, unless that is every address: 0.0.0.0 or ::), localhost and the loopback addresses, and
 * the names given to allowHosts. A request without a Host header is refused: every browser and
 * every HTTP/1.1 client sends one, so only an HTTP/1.0 client could miss it, and letting it by
 * would be the one way past this check.
 */
export function hostCheck(
  bound: { host?: string; address: string },
  allowHosts: readonly string[] = [],
): (header: string | undefined) => boolean {
  const names = new Set([...LOOPBACK_NAMES, ...allowHosts.map(hostName)]);
  for (const a of [bound.host ?? '', bound.address]) {
    const n = hostName(a);
    if (!WILDCARDS.has(n)) names.add(n);
  }
  return (header) => {
    if (header === undefined) return false;
    const name = nameInHost(header);
    return name !== undefined && names.has(name);
  };
}

/** The body of the refusal (421): what to do about it, and no list of the names that pass. */
export const MISDIRECTED =
  'misdirected request: this server does not answer to the name in the ' +
  'Host header; to reach it under that name, start it with --allow-host ' +
  'NAME (allowHosts in the library)\n';
