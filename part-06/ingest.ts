// Loads the help-center articles into the database: `npx tsx ingest.ts`. Safe to run any time.
import { parseFlags, runMain } from '../shared/cli.ts';
import { describeIngest, ingestArticles, HELP_CENTER_DIR } from './ingest-articles.ts';

const USAGE = `Usage: npx tsx ingest.ts

Reads the help-center articles (${HELP_CENTER_DIR}), cuts them into chunks and stores them.
Unchanged articles are skipped; changed ones replace their chunks; deleted ones are removed.
Then run build-index.ts to embed the new chunks.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  for (const line of describeIngest(await ingestArticles())) console.log(line);
}, USAGE);
