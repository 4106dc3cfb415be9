// What every entry script shares: argument parsing, dim status lines, and one-line errors instead of stack traces.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from './config.ts';
import { DatabaseError, closePool } from './db.ts';
import { ProviderError } from './llm/errors.ts';

/** The user typed something the script cannot use. Printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** node:util parseArgs, with its errors turned into a UsageError the user can act on. */
export function parseFlags<T extends ParseArgsConfig>(config: T) {
  try {
    return parseArgs({ ...config, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message.split('\n')[0] : String(error));
  }
}

/** Colour only when a person is looking: a terminal, and NO_COLOR not set. */
const useColour = (stream: NodeJS.WriteStream) => Boolean(stream.isTTY) && !process.env.NO_COLOR;

/** Grey text for status lines, so they stand apart from the answer. */
export function dim(text: string, stream: NodeJS.WriteStream = process.stdout): string {
  return useColour(stream) ? `\x1b[2m${text}\x1b[22m` : text;
}

/**
 * Runs an entry script's main function. Known failures become one sentence on stderr and an exit code
 * (2 for usage, 1 otherwise); the database pool is closed so the process can end.
 */
export async function runMain(main: () => Promise<number | void>, usage?: string): Promise<void> {
  let code: number;
  try {
    code = (await main()) ?? 0;
  } catch (error) {
    code = reportError(error, usage);
  } finally {
    await closePool();
  }
  process.exitCode = code;
}

function reportError(error: unknown, usage?: string): number {
  if (error instanceof UsageError) {
    console.error(error.message);
    if (usage) console.error(usage);
    return 2;
  }
  if (error instanceof ConfigError || error instanceof DatabaseError || error instanceof ProviderError) {
    console.error(error.message);
    return 1;
  }
  // A bug, not a user mistake: keep it to one line unless someone asks for the details.
  const message = error instanceof Error ? error.message : String(error);
  console.error(`Unexpected error: ${message}`);
  if (process.env.DEBUG) console.error(error);
  else console.error('Run again with DEBUG=1 to see the stack trace.');
  return 1;
}
