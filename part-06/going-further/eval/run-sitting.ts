// Going further: the eval's child process, one sitting of a scenario: reads it (JSON) on stdin, prints its record (JSON) on stdout. eval.ts starts it with DB_NAME naming the trial's scratch database.
import { text } from 'node:stream/consumers';
import { parseFlags, runMain } from '../../../shared/cli.ts';
import { ensureLogDir, llmSettings } from '../../../shared/config.ts';
import { commandFor } from '../../../shared/hints.ts';
import { memoryBudget } from '../../context.ts';
import { notesBudget } from '../notes/recall-notes.ts';
import { maxToolCallsPerReply } from '../question/call-limits.ts';
import { runSitting, type SittingInput } from './sitting.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '< sitting.json')}

Runs one sitting of an eval scenario in the database DB_NAME names: the customer, the conversation to
resume if any, and the turns, as JSON on standard input; prints what happened as JSON. npm run eval
starts it for each sitting, with DB_NAME naming the trial's scratch database.`;

await runMain(async () => {
  parseFlags({ options: {} });
  // Settings are read once, here, as the chat reads them.
  const settings = {
    llm: llmSettings(),
    logDir: ensureLogDir(),
    budget: memoryBudget(),
    notesMaxChars: notesBudget(),
    maxToolCalls: maxToolCallsPerReply(),
  };
  const input = JSON.parse(await text(process.stdin)) as SittingInput;
  const result = await runSitting(input, settings, (line) => console.error(line));
  console.log(JSON.stringify(result));
}, USAGE);
