/**
 * Where `fspl queue-send` sends: `ssh:HOST:QUEUE`, HOST as ssh takes it (`user@host`, an alias of
 * ~/.ssh/config, `[::1]` for an IPv6 address) and QUEUE the queue's directory there (relative to
 * the remote home, as with scp); or `nncp:NODE:HANDLE`, an NNCP node and the exec handle there
 * that runs `fspl queue-receive -q QUEUE`. Parsed here, once, into a type; the senders never see
 * the text.
 */
import { DestinationError } from '../base/errors.js';

export interface SshDestination {
  kind: 'ssh';
  /** The ssh destination, as ssh takes it. */
  host: string;
  /** The queue directory on that host. */
  dir: string;
}

export interface NncpDestination {
  kind: 'nncp';
  /** The NNCP node, as this node's config names it. */
  node: string;
  /** Its exec handle that runs `fspl queue-receive`. */
  handle: string;
}

export type Destination = SshDestination | NncpDestination;

const FORMS = 'expected ssh:HOST:QUEUE (e.g. ssh:user@host:/srv/queue) or nncp:NODE:HANDLE';

/** `--to`'s value as a destination, or a DestinationError that says what is wrong in one line. */
export function parseDestination(text: string): Destination {
  const colon = text.indexOf(':');
  const scheme = colon < 0 ? '' : text.slice(0, colon);
  const rest = text.slice(colon + 1);
  if (scheme === 'nncp') return nncpDestination(text, rest);
  if (scheme !== 'ssh')
    throw new DestinationError(`--to ${JSON.stringify(text)}: unknown kind of destination; ${FORMS}`);
  let host: string;
  let dir: string;
  if (rest.startsWith('[')) {
    const end = rest.indexOf(']:');
    if (end < 0)
      throw new DestinationError(
        `--to ${JSON.stringify(text)}: an IPv6 host in [...] must be followed by :QUEUE; ${FORMS}`,
      );
    host = rest.slice(1, end);
    dir = rest.slice(end + 2);
  } else {
    const sep = rest.indexOf(':');
    if (sep < 0) throw new DestinationError(`--to ${JSON.stringify(text)}: no queue directory; ${FORMS}`);
    host = rest.slice(0, sep);
    dir = rest.slice(sep + 1);
  }
  if (host === '') throw new DestinationError(`--to ${JSON.stringify(text)}: no host; ${FORMS}`);
  // ssh would read a leading '-' as one of its options (-oProxyCommand=...): never a host.
  if (host.startsWith('-') || /[\s\0]/.test(host))
    throw new DestinationError(`--to ${JSON.stringify(text)}: ${JSON.stringify(host)} is not a host name`);
  if (dir === '') throw new DestinationError(`--to ${JSON.stringify(text)}: no queue directory; ${FORMS}`);
  if (dir.includes('\0') || dir.includes('\n'))
    throw new DestinationError(`--to ${JSON.stringify(text)}: the queue directory holds a control character`);
  return { kind: 'ssh', host, dir };
}

/** `nncp:NODE:HANDLE`: two words, neither read by nncp-exec as an option. */
function nncpDestination(text: string, rest: string): NncpDestination {
  const [node = '', handle = '', ...more] = rest.split(':');
  const word = (w: string) => w !== '' && !w.startsWith('-') && !/[\s\0]/.test(w);
  if (more.length > 0 || !word(node) || !word(handle))
    throw new DestinationError(
      `--to ${JSON.stringify(text)}: expected nncp:NODE:HANDLE, an NNCP node ` +
        `and its exec handle that runs fspl queue-receive`,
    );
  return { kind: 'nncp', node, handle };
}

/** The destination as the user wrote it (for messages). */
export function describeDestination(d: Destination): string {
  if (d.kind === 'nncp') return `nncp:${d.node}:${d.handle}`;
  return `ssh:${d.host.includes(':') ? `[${d.host}]` : d.host}:${d.dir}`;
}
