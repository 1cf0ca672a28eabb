/**
 * What a node's NNCP config says about its neighbours: their node ids (for a receiver that
 * accepts only some senders, receive.ts) and their exec handles (for `fspl net check --host` on a
 * host that receives through NNCP). The config is Hjson (read with the hjson package, as NNCP writes it), at
 * the path given, else $NNCPCFG, else /etc/nncp.hjson: where NNCP's own tools look.
 */
import fs from 'node:fs';

export const DEFAULT_NNCP_CFG = '/etc/nncp.hjson';

/** A neighbour of the node: its name in the config, its node id, and its exec handles (handle to argv). */
export interface NncpNeighbour {
  name: string;
  /** Its node id (`id:`), as NNCP gives it to an exec handle in NNCP_SENDER; undefined when the entry has none. */
  id?: string;
  exec: Record<string, string[]>;
}

export interface NncpConfig {
  path: string;
  neighbours: NncpNeighbour[];
}

/** The config's path as NNCP's tools would find it. */
export function nncpConfigPath(given?: string): string {
  return given ?? process.env.NNCPCFG ?? DEFAULT_NNCP_CFG;
}

/** Read a node's config: its neighbours and their exec handles; an Error that says why it can't. */
export async function readNncpConfig(given?: string): Promise<NncpConfig> {
  const file = nncpConfigPath(given);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(
      `cannot read the NNCP config ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const { default: Hjson } = await import('hjson');
  let doc: unknown;
  try {
    doc = Hjson.parse(text);
  } catch (err) {
    throw new Error(`the NNCP config ${file} is not Hjson: ${(err as Error).message.split('\n')[0]}`);
  }
  const neigh = (doc as { neigh?: unknown })?.neigh;
  const neighbours: NncpNeighbour[] = [];
  if (neigh && typeof neigh === 'object')
    for (const [name, n] of Object.entries(neigh as Record<string, unknown>)) {
      const exec = (n as { exec?: unknown })?.exec;
      const handles: Record<string, string[]> = {};
      if (exec && typeof exec === 'object')
        for (const [h, argv] of Object.entries(exec as Record<string, unknown>))
          if (Array.isArray(argv) && argv.every((w) => typeof w === 'string')) handles[h] = argv;
      const id = (n as { id?: unknown })?.id;
      neighbours.push({ name, id: typeof id === 'string' ? id : undefined, exec: handles });
    }
  return { path: file, neighbours };
}
