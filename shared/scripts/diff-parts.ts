// `npm run diff -- 5 6` prints what chapter 6 changed, code first and new files in full (see chapter-diff.ts).
import { parseFlags, runMain, UsageError } from '../cli.ts';
import { commandFor } from '../hints.ts';
import { printable } from '../text.ts';
import { chapterDiff } from './chapter-diff.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '<from> <to> [--all]')}   (e.g. ${commandFor(import.meta.url, '5 6')})

Prints what changed between two parts, file by file, in reading order: the order of the part's
README when it groups its changes (Part 6: the core, then going further, each with the lines it
adds), else SQL first, then each module before the modules that import it, the scripts you run last.
New files are shown in full. --all adds the README, tests/ and scenarios.json after the code.`;

await runMain(async () => {
  const { values, positionals } = parseFlags({
    options: { all: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (positionals.length !== 2) throw new UsageError('Give two part numbers.');
  const [from, to] = positionals.map((value) => {
    if (!/^\d{1,2}$/.test(value))
      throw new UsageError(`"${printable(value, { singleLine: true })}" is not a part number.`);
    return Number(value);
  });
  process.stdout.write(chapterDiff(from, to, { all: values.all }).text);
}, USAGE);
