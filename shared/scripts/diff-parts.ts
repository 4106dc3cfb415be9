// `npm run diff -- 5 6` prints what chapter 6 changed, code first and new files in full (see chapter-diff.ts).
import { parseFlags, runMain, type ScriptIo, startedDirectly, UsageError } from '../cli.ts';
import { commandFor } from '../hints.ts';
import { printable } from '../text.ts';
import { chapterDiff } from './chapter-diff.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '<from> <to> [--all] [--going-further]', io)}   (e.g. ${commandFor(import.meta.url, '5 6', io)})

Prints what changed between two parts, file by file, in reading order: the order of the part's
README when it groups its changes, else SQL first, then each module before the modules that import
it, the scripts you run last. New files are shown in full. --going-further adds Part 6's full Nimbus
(going-further/, a book of its own) after the chapter; --all adds the READMEs, tests/ and
scenarios.json after the code.`;
}

export async function main(io: ScriptIo): Promise<void> {
  const { values, positionals } = parseFlags({
    args: io.args,
    options: { all: { type: 'boolean' }, 'going-further': { type: 'boolean' } },
    allowPositionals: true,
  });
  if (positionals.length !== 2) throw new UsageError('Give two part numbers.');
  const [from, to] = positionals.map((value) => {
    if (!/^\d{1,2}$/.test(value))
      throw new UsageError(`"${printable(value, { singleLine: true })}" is not a part number.`);
    return Number(value);
  });
  io.stdout.write(
    chapterDiff(from, to, { all: values.all, goingFurther: values['going-further'] }).text,
  );
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
