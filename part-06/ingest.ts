// Loads the help-center articles into the database: `npx tsx ingest.ts`. Safe to run any time.
import { parseFlags, runMain, type ScriptIo, startedDirectly } from '../shared/cli.ts';
import { llmSettingsOrError } from '../shared/config.ts';
import { commandFor, displayPath } from '../shared/hints.ts';
import { describeIngest, ingestArticles, HELP_CENTER_DIR } from './ingest-articles.ts';
import { ensureDatabase } from './setup-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '', io)}

Reads the help-center articles (${displayPath(HELP_CENTER_DIR, io)}), cuts them into chunks and stores them.
Unchanged articles are skipped; changed ones replace their chunks; deleted ones are removed.
Then run ${commandFor(new URL('./build-index.ts', import.meta.url), '', io)} to embed the new chunks.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  parseFlags({ args: io.args, options: {} });
  await ensureDatabase(io.error, llmSettingsOrError(io.env));
  for (const line of describeIngest(await ingestArticles())) io.log(line);
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
