/**
 * The global options before the subcommand (-l/--log-level, -V/--version, -h/--help,
 * --implementation), scanned once (command-line.ts).
 */

/** The global options before the subcommand, read once for every parser. */
export interface Globals {
  /** The -l/--log-level values given, in order. */
  logLevels: string[];
  /** -V/--version came before any -h/--help: it wins over everything else, as in the reference. */
  version: boolean;
  /** -h/--help came first. */
  help: boolean;
  /** --implementation (an extension): which fspl this is. */
  implementation: boolean;
  /** Something else starting with '-', or -l without its value. */
  other: boolean;
  /** The first of those something elses (undefined: -l without its value). */
  unknown?: string;
  /** Index of the subcommand (argv.length if none). */
  end: number;
}

export function scanGlobals(argv: string[]): Globals {
  const g: Globals = {
    logLevels: [],
    version: false,
    help: false,
    implementation: false,
    other: false,
    end: argv.length,
  };
  let i = 0;
  for (; i < argv.length && argv[i]!.startsWith('-') && argv[i] !== '--'; i++) {
    const a = argv[i]!;
    if (a === '-V' || a === '--version' || a === '-h' || a === '--help') {
      if (!g.version && !g.help && !g.implementation)
        a === '-h' || a === '--help' ? (g.help = true) : (g.version = true);
    } else if (a === '--implementation') {
      if (!g.version && !g.help) g.implementation = true;
    } else if (a === '-l' || a === '--log-level') {
      if (i + 1 >= argv.length) g.other = true;
      else g.logLevels.push(argv[++i]!);
    } else if (a.startsWith('--log-level=')) {
      g.logLevels.push(a.slice('--log-level='.length));
    } else if (a.startsWith('-l') && !a.startsWith('--') && a[2] !== '=') {
      g.logLevels.push(a.slice(2));
    } else {
      g.other = true;
      g.unknown ??= a;
    }
  }
  g.end = i;
  return g;
}
