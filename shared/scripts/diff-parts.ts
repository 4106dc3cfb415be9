// `npm run diff -- 5 6` prints what chapter 6 changed: `diff -ru part-05 part-06`, run from the repo root.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseFlags, runMain, UsageError } from '../cli.ts';
import { ROOT_DIR } from '../config.ts';

const USAGE = 'Usage: npm run diff -- <from> <to>   (e.g. npm run diff -- 5 6)';

await runMain(async () => {
  const { positionals } = parseFlags({ options: {}, allowPositionals: true });
  if (positionals.length !== 2) throw new UsageError('Give two part numbers.');
  const [from, to] = positionals.map((value) => {
    const dir = `part-${value.padStart(2, '0')}`;
    if (!/^\d{1,2}$/.test(value) || !existsSync(path.join(ROOT_DIR, dir))) throw new UsageError(`There is no ${dir}.`);
    return dir;
  });
  // diff exits 1 when the folders differ, which is the expected outcome here, not a failure.
  const result = spawnSync('diff', ['-ru', from, to], { cwd: ROOT_DIR, stdio: 'inherit' });
  return result.status === 2 ? 1 : 0;
}, USAGE);
