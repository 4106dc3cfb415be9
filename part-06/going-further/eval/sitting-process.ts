// The eval's child process, one sitting of a scenario: reads it (JSON) on stdin, prints its record (JSON) on stdout. eval.ts starts it with DB_NAME naming the trial's scratch database.
import { text } from 'node:stream/consumers';
import { parseFlags, runMain, type ScriptIo, startedDirectly } from '../../../shared/cli.ts';
import { ensureLogDir, llmSettings } from '../../../shared/config.ts';
import { commandFor } from '../../../shared/hints.ts';
import { memoryBudget } from '../../context.ts';
import { notesBudget } from '../notes/recall-notes.ts';
import { maxToolCallsPerReply } from '../question/call-limits.ts';
import { runSitting, type SittingInput } from './sitting.ts';
import { openClusterDatabase } from '../store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '< sitting.json', io)}

Runs one sitting of an eval scenario in the database DB_NAME names: the customer, the conversation to
resume if any, and the turns, as JSON on standard input; prints what happened as JSON. npm run eval
starts it for each sitting, with DB_NAME naming the trial's scratch database.`;
}

export async function main(io: ScriptIo): Promise<void> {
  parseFlags({ args: io.args, options: {} });
  try {
    // Settings are read once, here, as the chat reads them.
    const settings = {
      llm: llmSettings(io.env),
      logDir: ensureLogDir(io.env),
      budget: memoryBudget(io.env),
      notesMaxChars: notesBudget(io.env),
      maxToolCalls: maxToolCallsPerReply(io.env),
    };
    const input = JSON.parse(await text(io.stdin)) as SittingInput;
    const result = await runSitting(input, settings, (line) => io.error(line));
    io.log(JSON.stringify(result));
  } catch (error) {
    // Said on stdout too, as the record's place: the eval shows this, not whatever stderr said first.
    io.log(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
    throw error;
  }
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
