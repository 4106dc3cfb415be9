// Loads the help-center articles into the database: `npx tsx ingest.ts`. Safe to run any time.
import { parseFlags, runMain } from '../shared/cli.ts';
import { llmSettingsOrError } from '../shared/config.ts';
import { commandFor, displayPath } from '../shared/hints.ts';
import { describeIngest, ingestArticles, HELP_CENTER_DIR } from './ingest-articles.ts';
import { ensureDatabase } from './setup-database.ts';

const USAGE = `Usage: ${commandFor(import.meta.url)}

Reads the help-center articles (${displayPath(HELP_CENTER_DIR)}), cuts them into chunks and stores them.
Unchanged articles are skipped; changed ones replace their chunks; deleted ones are removed.
Then run ${commandFor(new URL('./build-index.ts', import.meta.url))} to embed the new chunks.`;

await runMain(async () => {
  parseFlags({ options: {} });
  await ensureDatabase(console.error, llmSettingsOrError());
  for (const line of describeIngest(await ingestArticles())) console.log(line);
}, USAGE);
