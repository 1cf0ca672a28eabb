/**
 * What a grammar is (OptionSpec, CommandSpec: spec.ts's and net-spec.ts's data) and what parsing
 * a command line by one gives (Invocation): its arguments by the grammar's names, typed from the
 * grammar when it is declared `as const` (ArgsOf).
 */
export interface OptionSpec {
  readonly long: string;
  readonly short?: string;
  /** 'string' options take a value; 'boolean' ones are flags. */
  readonly kind: 'string' | 'boolean';
  readonly required?: boolean;
  /** A flag's default is a boolean (`--progress`, which `--no-progress` turns off). */
  readonly default?: string | boolean;
  /** Accepted values, matched case-insensitively. */
  readonly choices?: readonly string[];
  /** May be given more than once, each value kept (`--service`). */
  readonly array?: boolean;
  /** What its value is called in usage lines and errors: `-q DIR`. */
  readonly value?: string;
  /** A required option: what it is, said when it is missing (`missing -q DIR: the queue directory`). */
  readonly what?: string;
  readonly describe: string;
}

export interface CommandSpec {
  readonly name: string;
  readonly usage: string;
  readonly describe: string;
  readonly options: readonly OptionSpec[];
  /** Required positional arguments, in order. */
  readonly positionals: readonly string[];
  /** Optional positional arguments, after the required ones (`fspl net retry NET [ERROR_PLACE]`). */
  readonly optionalPositionals?: readonly string[];
  /** What help says of each positional, when it says something. */
  readonly positionalHelp?: Readonly<Record<string, string>>;
  /** Whether `-- PARAMS...` is accepted. */
  readonly params: boolean;
}

/** A parsed argument's value: a string option's or a positional's text, a flag, or a repeated option's values. */
export type ArgValue = string | boolean | readonly string[];

/** The value an option of this spec has once parsed. */
type OptionValue<O extends OptionSpec> = O extends { array: true }
  ? readonly string[]
  : O extends { kind: 'boolean' }
    ? boolean
    : string;

/**
 * A command's parsed arguments, typed from its grammar (declared `as const`): each option by its
 * long name, each positional by its name, undefined when not given (defaults are filled in). A
 * name the command does not have is a type error, so a handler can't misspell one.
 */
export type ArgsOf<C extends CommandSpec> = {
  readonly [O in C['options'][number] as Literal<O['long']>]: OptionValue<O> | undefined;
} & {
  readonly [P in Literal<C['positionals'][number]> | OptionalPositionals<C>]: string | undefined;
};

type OptionalPositionals<C extends CommandSpec> = C extends { optionalPositionals: readonly (infer P extends string)[] }
  ? Literal<P>
  : never;

/** Names the grammar spells out; a plain `string` (a spec not `as const`) gives none, not an index signature. */
type Literal<T extends string> = string extends T ? never : T;

/** Arguments as a parser gives them, by the grammar's names only (normalised: no alias, no camelCase twin). */
export type ParsedArgs = { readonly [name: string]: ArgValue | undefined };

/** What a handler receives: the parsed options, the log level text and the arguments after `--`. */
export interface Invocation<A = ParsedArgs> {
  command: string;
  /** Options by long name, positionals by name; enum defaults filled in. */
  args: A;
  params: string[];
  logLevel: string;
}

/**
 * An invocation of `spec`'s command typed A (ArgsOf that spec): its args were read by that same
 * spec, so they have that shape. The one place where the grammar as data meets its type.
 */
export function invocationOf<A>(inv: Invocation, spec: CommandSpec): Invocation<A> {
  if (inv.command !== spec.name) throw new TypeError(`invocationOf: ${inv.command} is not ${spec.name}`);
  return inv as Invocation<A>;
}
