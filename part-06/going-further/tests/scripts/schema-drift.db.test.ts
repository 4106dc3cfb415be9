// A schema that drifted (a column dropped, a table renamed by hand): one sentence that says which setup repairs it.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const script = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const PROGRAMS = [
  {
    name: 'the full Nimbus',
    ask: script('../../ask.ts'),
    setup: 'part-06/going-further/setup.ts',
  },
  { name: "the chapter's core", ask: script('../../../ask.ts'), setup: 'part-06/setup.ts' },
];

let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {}, fake.llm('gemini'));
  await query('ALTER TABLE messages DROP COLUMN role'); // changed by hand since setup
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe.each(PROGRAMS)('a dropped column, met by $name', ({ ask, setup }) => {
  it.each([
    ['the repository root', undefined],
    ['the part folder', 'part-06'],
  ])('is one sentence naming it and the setup to run, as typed from %s', async (_, cwd) => {
    fake.reply({ text: 'Order 1042 has shipped.' });
    const env = { ...fake.env('gemini'), DB_NAME: db.name };
    const result = await runInProcess(ask, ['--quiet', 'Where is order 1042?'], {
      env,
      cwd: cwd && script(`../../../../${cwd}`),
    });
    const command = cwd ? setup.replace(`${cwd}/`, '') : setup;
    expect(result.stderr).toContain(
      `Column "role" is missing from database "${db.name}" on MySQL at `,
    );
    expect(result.stderr).toContain(`Run npx tsx ${command} to set it up again`);
    expect(result.stderr).not.toMatch(/Unknown column|Unexpected error/);
  });
});
