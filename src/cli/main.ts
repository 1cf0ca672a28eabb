/**
 * The fspl entry point: read the command line (parse/command-line.ts), then import and run the
 * chosen subcommand's handler. Usage errors exit 2; runtime errors exit 1 with one `Error: ...`
 * line on stderr.
 */
import { parseCommandLine } from './parse/command-line.js';
import { reportError, usageText, writeOut } from './text/output.js';

const LIGHT = new Set(['gen-uuid', 'gen-filename', 'show-license']);

/** Exactly the reference's line: scripts check it. Our own version is in package.json. */
export const VERSION_LINE = 'filespooler 1.2.2\n';

/** Run the CLI; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const line = await parseCommandLine(argv);
  switch (line.kind) {
    case 'version':
      writeOut(VERSION_LINE);
      return 0;
    case 'implementation':
      writeOut((await import('./commands/implementation.js')).implementationLine());
      return 0;
    case 'usage':
      process.stderr.write(usageText(line.error));
      return 2;
    case 'help': {
      const text = await (await import('./text/help.js')).helpText(line.topic);
      if (line.asError) process.stderr.write(text);
      else writeOut(text);
      return line.asError ? 2 : 0;
    }
  }
  const inv = line.invocation;
  if (line.net) return (await import('./commands/net.js')).runNet(inv);
  try {
    // The trivial subcommands get a module of their own, so they load almost nothing.
    const { run } = LIGHT.has(inv.command)
      ? await import('./commands/standalone-commands.js')
      : await import('./commands/commands.js');
    return await run(inv);
  } catch (err) {
    return reportError(err);
  }
}
