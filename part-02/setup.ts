// Resets the database to the sample store: `npx tsx setup.ts`. The tables here hold only sample data.
import { parseFlags, runMain } from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { resetDatabase } from './setup-database.ts';

const USAGE = `Usage: ${commandFor(import.meta.url)}

Resets the database named by DB_NAME in .env: drops this part's tables and creates them again with
the sample store. Every other command creates what is missing by itself: you only need this to start over.`;

await runMain(async () => {
  parseFlags({ options: {} });
  await resetDatabase();
}, USAGE);
