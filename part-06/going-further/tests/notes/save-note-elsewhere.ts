// Test helper: saves one customer note from another process, as a second database node would (DB_NAME: that node's view of the data).
//
// Prints "ready" once connected, saves when a line arrives on stdin (so the test decides the moment),
// then prints the outcome as JSON. If stdin closes first (the test went away), it saves nothing.
import { dbSettings } from '../../../../shared/config.ts';
import { closePool, query, useDatabase } from '../../../../shared/db.ts';
import { saveNote } from '../../notes/notes-queries.ts';

const [customerId, conversationId, text] = process.argv.slice(2);
await useDatabase(dbSettings(process.env));
await query('SELECT 1');
console.log('ready');
const go = await new Promise<boolean>((resolve) => {
  process.stdin.once('data', () => resolve(true));
  process.stdin.once('end', () => resolve(false));
});
if (go) console.log(JSON.stringify(await saveNote(Number(customerId), conversationId, text, null)));
await closePool();
