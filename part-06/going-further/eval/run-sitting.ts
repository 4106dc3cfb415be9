// Going further: the eval's child process, one sitting of a scenario: reads it (JSON) on stdin, prints its record (JSON) on stdout. eval.ts starts it with DB_NAME naming the trial's scratch database.
import { text } from 'node:stream/consumers';
import { runMain } from '../../../shared/cli.ts';
import { ensureLogDir, llmSettings } from '../../../shared/config.ts';
import { memoryBudget } from '../../context.ts';
import { notesBudget } from '../recall.ts';
import { runSitting, type SittingInput } from './sitting.ts';

const USAGE = `Runs one sitting of an eval scenario: started by eval.ts (npm run eval), not by hand.`;

await runMain(async () => {
  // Settings are read once, here, as the chat reads them.
  const settings = {
    llm: llmSettings(),
    logDir: ensureLogDir(),
    budget: memoryBudget(),
    notesMaxChars: notesBudget(),
  };
  const input = JSON.parse(await text(process.stdin)) as SittingInput;
  const result = await runSitting(input, settings, (line) => console.error(line));
  console.log(JSON.stringify(result));
}, USAGE);
