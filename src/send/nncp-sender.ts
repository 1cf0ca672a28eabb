/**
 * Which NNCP node sent what a receiver is given (NNCP_SENDER, set by nncp-toss): a receiver told
 * `from` (node ids, or neighbours' names in its NNCP config) refuses anything else before it reads
 * a byte. An id is compared as it is; a name is looked up in the config (nncp-config.ts) only when
 * no id matched.
 */
import { ReceiveRefusedError } from '../base/errors.js';
import { type NncpConfig, readNncpConfig } from './nncp-config.js';

/** An NNCP node id: 32 bytes in unpadded base32 (RFC 4648), as NNCP_SENDER holds it. */
const NODE_ID_RE = /^[A-Z2-7]{52}$/;

/** Whether `node` is written as an NNCP node id rather than a neighbour's name. */
export function isNodeId(node: string): boolean {
  return NODE_ID_RE.test(node);
}

export interface SenderRule {
  /** The NNCP nodes that may send: ids, or names of neighbours in the config `cfg`. */
  from: readonly string[];
  /** The sending node's id, as NNCP gives an exec handle in NNCP_SENDER; undefined when not run by NNCP. */
  sender: string | undefined;
  /** The receiving node's NNCP config, where names in `from` are looked up (default: NNCP's own). */
  cfg?: string;
  /** The receiver, for messages: `queue /srv/q`, `place inbox on host b`. */
  what: string;
}

/** Nothing, when `rule.sender` is one of `rule.from`; else a ReceiveRefusedError that says why, in one line. */
export async function admitSender(rule: SenderRule): Promise<void> {
  const { from, sender, what } = rule;
  const allowed = from.length === 0 ? 'none' : from.join(', ');
  if (sender === undefined)
    throw new ReceiveRefusedError(
      `refused: ${what} takes packets only from NNCP node ` +
        `${allowed}, and NNCP_SENDER is not set (not run ` +
        `by nncp-toss as an exec handle); nothing stored`,
    );
  if (from.includes(sender)) return;
  // Not one of the ids given: the config, for the names given (and, in the refusal, the sender's).
  const names = from.filter((n) => !isNodeId(n));
  let config: NncpConfig | undefined;
  let unread = '';
  try {
    config = await readNncpConfig(rule.cfg);
  } catch (err) {
    if (names.length > 0) unread = `; ${(err as Error).message}, where the names would be looked up`;
  }
  const idOf = (name: string) => config?.neighbours.find((n) => n.name === name)?.id;
  if (names.some((n) => idOf(n) === sender)) return;
  const shown = from.map((n) =>
    isNodeId(n) || config === undefined ? n : `${n} (${idOf(n) ?? `not a neighbour in ${config.path}`})`,
  );
  throw new ReceiveRefusedError(
    `refused: ${what} takes packets only from NNCP node ${shown.join(', ')}, ` +
      `not from ${nodeShown(sender, config)}${unread}; nothing stored`,
  );
}

/** A node id, with its name when the config knows it: `ID (bob in /etc/nncp.hjson)`. */
function nodeShown(id: string, config: NncpConfig | undefined): string {
  const name = config?.neighbours.find((n) => n.id === id)?.name;
  return name === undefined || config === undefined ? id : `${id} (${name} in ${config.path})`;
}
