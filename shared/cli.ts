// What every entry script shares: flags and --help, dim status lines, and one-line errors instead of stack traces.
import { EventEmitter } from 'node:events';
import path from 'node:path';
import readline from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { inspect, parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, dbSettings } from './config.ts';
import { Database, DatabaseError, withDatabase } from './db.ts';
import { ProviderError } from './llm/errors.ts';
import { printable } from './text.ts';

/** The user typed something the script cannot use. Printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** --help or -h: runMain prints the usage and exits 0. */
class HelpRequested extends Error {}

/**
 * node:util parseArgs with --help/-h added to every script, and its errors reworded as one sentence
 * (Node's own messages are a paragraph about positional arguments).
 */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const options = { help: { type: 'boolean', short: 'h' }, ...config.options } as T['options'];
  let parsed;
  try {
    parsed = parseArgs({ ...config, options, strict: true });
  } catch (error) {
    throw new UsageError(reword(error as NodeJS.ErrnoException));
  }
  if ((parsed.values as { help?: boolean }).help) throw new HelpRequested();
  return parsed as ReturnType<typeof parseArgs<T>>;
}

function reword(error: NodeJS.ErrnoException): string {
  // What was typed is quoted back, so it is escaped: `--\x1b[2J` must not clear the screen.
  const typed = (pattern: RegExp) =>
    printable(pattern.exec(error.message)?.[1] ?? '', { singleLine: true });
  const option = typed(/'(?:-\w, )?(-[^' ]+)/); // "Option '-y, --yes' …" names the long form
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `Unknown option ${option}.`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /argument missing/.test(error.message)
        ? `${option} needs a value, e.g. ${option}=…`
        : `${option} takes no value.`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `Unexpected argument ${typed(/'([^']*)'/)}: this command takes none.`;
    default:
      return printable(error.message.split('\n')[0], { singleLine: true });
  }
}

/** A conversation id typed by a user (--resume=, …), checked before it goes anywhere near the database. */
export function conversationId(value: string, where: string): string {
  if (/^[0-9a-f]{32}$/.test(value)) return value;
  const shown = printable(value, { singleLine: true });
  throw new UsageError(
    `${where} needs a conversation id: 32 lowercase hex characters (got "${shown}").`,
  );
}

/** A count typed as a flag (--budget=4000): a whole number from 1 to 999999999, or the flag's default. */
export function wholeNumber(value: string | undefined, flag: string, otherwise: number): number {
  if (value === undefined) return otherwise;
  if (/^[1-9]\d{0,8}$/.test(value)) return Number(value);
  const shown = printable(value, { singleLine: true });
  throw new UsageError(`${flag} must be a whole number from 1 to 999999999 (got "${shown}").`);
}

/**
 * Asks a person to confirm something that deletes data, on a terminal (Ctrl-C and Ctrl-D answer no).
 * In a script there is nobody to ask: the command that confirms (`yes`) is said instead.
 */
export async function confirmed(
  question: string,
  yes: string,
  io: Pick<ScriptIo, 'stdin' | 'stdout' | 'log'> = processIo(),
): Promise<boolean> {
  if (!io.stdin.isTTY) throw new UsageError(`Nothing was changed: to confirm, run ${yes}`);
  const rl = readline.createInterface({ input: io.stdin, output: io.stdout });
  const controller = new AbortController();
  rl.on('SIGINT', () => controller.abort());
  rl.on('close', () => controller.abort());
  try {
    return /^y(es)?$/i.test((await rl.question(question, { signal: controller.signal })).trim());
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
    io.log();
    return false;
  } finally {
    rl.close();
  }
}

/** ["a", "b", "c"] → "a, b and c" */
export function listing(items: string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : items.join('');
}

/** Colour only when a person is looking: a terminal, and NO_COLOR not set. */
const useColour = (stream: { isTTY?: boolean }) => Boolean(stream.isTTY) && !process.env.NO_COLOR;

/** Grey text for status lines, so they stand apart from the answer. */
export function dim(text: string, stream: { isTTY?: boolean } = process.stdout): string {
  return useColour(stream) ? `\x1b[2m${text}\x1b[22m` : text;
}

/**
 * What an entry script works with, handed in rather than taken from the process: its arguments, the
 * environment its settings are read from (once), the folder it was started in (printed commands are
 * written for it), and its streams. A test can run the same script in-process with its own.
 */
export interface ScriptIo {
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The file the process was started with (`npm run chat` is told apart by it). */
  entry: string;
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  /** Where Ctrl-C (and a kill) arrive as signals: the process, or a test's own emitter. */
  signals: Interrupts;
  /** One line on stdout, as console.log writes it. */
  log(text?: string): void;
  /** One line on stderr, as console.error writes it. */
  error(text?: string): void;
}

/** The signals a script may stop on: Ctrl-C, a kill, the terminal closed. */
export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/** The part of an EventEmitter (the process, in a real run) a script listens to for Ctrl-C and kills. */
export interface Interrupts {
  on(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
  off(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
}

/**
 * A ScriptIo from its parts, with log and error writing whole lines to its streams. Without `signals`,
 * no Ctrl-C ever comes (a test or a script run inside another gives its own).
 */
export function scriptIo(
  parts: Omit<ScriptIo, 'log' | 'error' | 'signals'> & { signals?: Interrupts },
): ScriptIo {
  return {
    ...parts,
    signals: parts.signals ?? new EventEmitter(),
    log: (text = '') => void parts.stdout.write(`${text}\n`),
    error: (text = '') => void parts.stderr.write(`${text}\n`),
  };
}

/** This process's own: what a script is given when a person runs it. */
export function processIo(): ScriptIo {
  return scriptIo({
    args: process.argv.slice(2),
    env: process.env,
    cwd: process.cwd(),
    entry: path.resolve(process.argv[1] ?? ''),
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    signals: process,
  });
}

/** Was this module the file the process was started with (not imported by a test or another script)? */
export function startedDirectly(moduleUrl: string): boolean {
  return path.resolve(process.argv[1] ?? '') === fileURLToPath(moduleUrl);
}

type Main = (io: ScriptIo) => Promise<number | void>;
type Usage = string | ((io: ScriptIo) => string);

export interface RunMainOptions {
  /**
   * How the script opens its database, from its settings: by default the one server DB_HOST and
   * DB_PORT name (the full Nimbus opens a cluster's, going-further/store/cluster-database.ts). A script
   * that passes one exports it too, so a test running it in-process opens the same.
   */
  openDatabase?: (io: ScriptIo) => Database;
}

/** The database of a chapter's script: the server its own DB_* settings name, read when first needed. */
function openPlainDatabase(io: ScriptIo): Database {
  return new Database(() => dbSettings(io.env), io);
}

/**
 * Runs an entry script's main function. Known failures become one sentence on stderr and an exit code
 * (2 for usage, 1 otherwise); the database pool is closed so the process can end.
 */
export async function runMain(
  main: Main,
  usage: Usage,
  options: RunMainOptions = {},
): Promise<void> {
  // A reader that leaves early (`| head`) closes the pipe: stop writing to it, quietly, instead of crashing.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
    });
  }
  process.exitCode = await runWith(main, usage, processIo(), options);
}

/** Runs main with these streams and settings, and returns its exit code: runMain's work, callable in-process. */
export async function runWith(
  main: Main,
  usage: Usage,
  io: ScriptIo,
  { openDatabase = openPlainDatabase }: RunMainOptions = {},
): Promise<number> {
  // The database this script uses is the one its own settings name.
  const database = openDatabase(io);
  try {
    return (await withDatabase(database, () => main(io))) ?? 0;
  } catch (error) {
    return reportError(error, typeof usage === 'string' ? usage : usage(io), io);
  } finally {
    await database.close(); // so a process can end
  }
}

function reportError(error: unknown, usage: string, io: ScriptIo): number {
  if (error instanceof HelpRequested) {
    io.log(usage);
    return 0;
  }
  // A message can quote what someone typed or what a server answered: it is printed escaped.
  const message = printable(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) {
    io.error(message);
    io.error(usage);
    return 2;
  }
  if (
    error instanceof ConfigError ||
    error instanceof DatabaseError ||
    error instanceof ProviderError
  ) {
    io.error(message);
    return 1;
  }
  // A bug, not a user mistake: keep it to one line unless someone asks for the details.
  io.error(`Unexpected error: ${message}`);
  if (io.env.DEBUG) io.error(inspect(error));
  else io.error('Run again with DEBUG=1 to see the stack trace.');
  return 1;
}
