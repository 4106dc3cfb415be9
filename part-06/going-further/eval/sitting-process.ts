// The eval's child process, one sitting of a scenario: reads it (JSON) on stdin, prints its record (JSON) on stdout. eval.ts starts it with DB_NAME naming the trial's scratch database, and a channel whose end stops it.
import { once } from 'node:events';
import readline from 'node:readline';
import { parseFlags, runMain, type ScriptIo, startedDirectly } from '../../../shared/cli.ts';
import { commandFor } from '../../../shared/hints.ts';
import { nimbusSettings } from '../nimbus.ts';
import { runSitting, type SittingInput } from './sitting.ts';
import { openClusterDatabase } from '../store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--from-eval] < sitting.json', io)}

Runs one sitting of an eval scenario in the database DB_NAME names: the customer, the conversation to
resume if any, and the turns, as JSON on standard input; prints what happened as JSON. npm run eval
starts it for each sitting, with DB_NAME naming the trial's scratch database, and --from-eval: the
sitting is then the first line of input, and the input's end (the eval is gone) stops it.`;
}

export async function main(io: ScriptIo): Promise<void> {
  const { values } = parseFlags({
    args: io.args,
    options: { 'from-eval': { type: 'boolean' } },
  });
  try {
    // Settings are read once, here, as the chat reads them.
    const settings = nimbusSettings(io.env);
    const evalGone = new AbortController();
    const lines = readline.createInterface({ input: io.stdin });
    const input = JSON.parse(
      values['from-eval'] ? (await once(lines, 'line'))[0] : await allOf(lines),
    ) as SittingInput;
    lines.once('close', () => evalGone.abort());
    try {
      const result = await runSitting(input, settings, (line) => io.error(line), evalGone.signal);
      if (values['from-eval'] && evalGone.signal.aborted)
        throw new Error('The eval that started this sitting is gone.');
      io.log(JSON.stringify(result));
    } finally {
      lines.close();
    }
  } catch (error) {
    // Said on stdout too, as the record's place: the eval shows this, not whatever stderr said first.
    io.log(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
    throw error;
  }
}

/** Every line of the input, joined again: a sitting written over several lines (a file). */
async function allOf(lines: readline.Interface): Promise<string> {
  const all: string[] = [];
  for await (const line of lines) all.push(line);
  return all.join('\n');
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
