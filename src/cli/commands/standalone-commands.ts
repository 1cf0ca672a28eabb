/** Handlers for the subcommands that touch no queue or packet: kept apart so they load fast. */
import { v4 as uuidv4 } from 'uuid';
import type { Invocation } from '../parse/grammar.js';
import { LICENSE_TEXT } from '../text/license.js';
import { checkLogLevel, writeOut } from '../text/output.js';

const handlers: Record<string, () => string> = {
  'gen-uuid': () => `${uuidv4()}\n`,
  'gen-filename': () => `fspl-${uuidv4()}.fspl\n`,
  'show-license': () => LICENSE_TEXT,
};

export async function run(inv: Invocation): Promise<number> {
  checkLogLevel(inv.logLevel);
  writeOut(handlers[inv.command]!());
  return 0;
}
