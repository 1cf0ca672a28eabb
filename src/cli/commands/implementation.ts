/**
 * `fspl --implementation` (an extension): which fspl answered. `fspl -V` prints the reference's
 * line (scripts read it), so it can't tell the two apart; over ssh the remote PATH decides which
 * one runs. The reference refuses this option (a usage error, exit 2), so its exit status tells
 * them apart too: `ssh host fspl --implementation`.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What `fspl --help` says of it, under the usage line. */
export const IMPLEMENTATION_NOTE =
  'This is the TypeScript fspl (npm package filespooler); `fspl ' +
  '--implementation` says its version and where it runs from.';

/** One line: this package's version, Node's, and the fspl that runs (the reference prints none). */
export function implementationLine(): string {
  // Three levels up from src/cli/commands/ and dist/cli/commands/, two from dist/bundle/ (where this is a chunk).
  let version = 'unknown version';
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(fs.readFileSync(fileURLToPath(new URL(up, import.meta.url)), 'utf8')) as {
        name?: string;
        version: string;
      };
      if (pkg.name === 'filespooler') {
        version = pkg.version;
        break;
      }
    } catch {
      // not there (or package.json gone: the line still says which fspl this is)
    }
  }
  return (
    `filespooler ${version}, the TypeScript fspl (compatible with ` +
    `Filespooler 1.2.2), on Node ${process.version}: ${where()}\n`
  );
}

/** The fspl that runs: as it was called, and the file it leads to when that is a link. */
function where(): string {
  const called = process.argv[1];
  if (called === undefined) return 'fspl';
  try {
    const real = fs.realpathSync(called);
    return real === called ? called : `${called} -> ${real}`;
  } catch {
    return called;
  }
}
