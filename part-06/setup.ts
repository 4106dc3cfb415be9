// Creates (or resets) the store's database for this part: `npx tsx setup.ts` or, from the root, `npm run setup`.
import { parseFlags, runMain } from '../shared/cli.ts';
import { setupDatabase } from './setup-database.ts';

const USAGE = `Usage: npx tsx setup.ts

Creates the database named by DB_NAME in .env (if needed) and loads this part's tables and sample data.
Running it again resets those tables.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  await setupDatabase();
}, USAGE);
