// Ordinary faults lose nothing and end nothing: bad settings said first, saves that fail, odd text (the core chat); streamed text, the index at start, deletions under a chat (the full Nimbus).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { collect, startScript, waitForOutput } from '../../../../shared/testing/run-script.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import { loadMessages } from '../../../memory.ts';
import { loadRows } from '../../store/message-rows.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const script = (name: string) => fileURLToPath(new URL(`../../../${name}`, import.meta.url));
/** The full Nimbus's scripts. */
const further = (name: string) => script(`going-further/${name}`);
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;
let logs: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {}); // the core scripts and the full Nimbus's share it
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-faults-'));
  env = { ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs };
});
afterAll(async () => {
  rmSync(logs, { recursive: true, force: true });
  await fake.close();
  await db.drop();
});

const databaseExists = async (name: string) =>
  (
    await query<unknown[]>('SELECT 1 FROM information_schema.schemata WHERE schema_name = ?', [
      name,
    ])
  ).length > 0;
const idIn = (stdout: string) => stdout.match(/New conversation ([0-9a-f]{32})/)![1];

describe('a streamed reply whose provider_raw says more than the neutral fields (the full chat)', () => {
  it('is not replayed verbatim, so the next question is accepted', async () => {
    // An OpenAI-compatible server streams a text and a tool call of a kind Nimbus does not run.
    const chunk = (delta: object, finish_reason: string | null = null) => ({
      id: 'x',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'gpt-fake',
      choices: [{ index: 0, delta, finish_reason }],
    });
    fake.reply(
      {
        stream: {
          events: [
            chunk({ role: 'assistant', content: 'Here you go.' }),
            chunk({
              tool_calls: [
                { index: 0, id: 'c1', type: 'custom', custom: { name: 'browser', input: 'x' } },
              ],
            }),
            chunk({}, 'stop'),
            '[DONE]',
          ],
        },
      },
      { text: 'Second answer.' },
    );
    const run = await runInProcess(further('chat.ts'), ['--quiet'], {
      env: { ...env, ...fake.env('openai') },
      input: 'First?\nSecond?\n',
    });
    expect(run.stdout).toContain('Nimbus: Here you go.');
    expect(run.stdout).toContain('Nimbus: Second answer.');
    expect(fake.chats().at(-1)!.status).toBe(200);
  });
});

describe('text from the store or a model (the full chat: streamed, line input)', () => {
  it('reaches the terminal with control characters and escape sequences made visible, even split across streamed pieces, and is stored as written', async () => {
    const pieces = [
      'Red \x1b',
      '[31malert\x1b[0m, bell ',
      '\x07, right-to-left \u202egnp.exe, half an emoji \ud83c.',
    ];
    const answer = pieces.join('');
    fake.reply({ text: pieces });
    const run = await runInProcess(further('chat.ts'), ['--quiet'], {
      env,
      input: 'Say something odd \x1b[2J\n',
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('You: Say something odd \\x1b[2J\n');
    expect(run.stdout).toContain(
      'Nimbus: Red \\x1b[31malert\\x1b[0m, bell \\x07, right-to-left \\u202egnp.exe, half an emoji',
    );
    expect(run.stdout).not.toMatch(/[\x07\x1b\u202e]/);
    const id = idIn(run.stdout);
    expect((await loadMessages(id))[1]).toMatchObject({
      content: answer.replace('\ud83c', '\ufffd'),
    });
    const shown = await runInProcess(further('show-conversation.ts'), [id], { env });
    expect(shown.stdout).not.toMatch(/[\x07\x1b\u202e]/);
    expect(shown.stdout).toContain('\\x1b[31malert');
  });

  it('a carriage return inside a piped line does not split the question in two', async () => {
    fake.reply((view) => ({ text: `Got ${JSON.stringify(view.lastUserText)}` }));
    const run = await runInProcess(further('chat.ts'), ['--quiet'], {
      env,
      input: 'Where is\rmy order 1042?\r\n',
    });
    expect(run.stdout).toContain('You: Where is\\rmy order 1042?\n');
    expect(run.stdout).toContain('Nimbus: Got "Where is\\rmy order 1042?"');
    expect(fake.pending()).toBe(0);
  });
});

describe('the help-center index at the full chat’s start', () => {
  it('says once when it was built by another model, with the command that rebuilds it', async () => {
    await query(
      "UPDATE help_chunks SET embedding = x'00000000', embedding_model = 'some-other-model', dimensions = 1",
    );
    const run = await runInProcess(further('chat.ts'), ['--quiet'], { env, input: 'exit\n' });
    expect(run.stdout).toContain(
      'The help-center index was built with some-other-model, not fake-embedding-001, so search uses keywords until you rebuild it: npx tsx part-06/build-index.ts',
    );
    await query(
      "UPDATE help_chunks SET embedding_model = 'fake-embedding-001' WHERE id = (SELECT MIN(id) FROM (SELECT id FROM help_chunks) AS c)",
    );
    const partial = await runInProcess(further('chat.ts'), ['--quiet'], {
      env,
      input: 'exit\n',
      cwd: path.dirname(script('chat.ts')),
    });
    expect(partial.stdout).toMatch(
      /\d+ of \d+ help-center passages are not indexed with fake-embedding-001 yet, so search cannot find them by meaning\. Finish the index: npx tsx build-index\.ts/,
    );
    const built = await runInProcess(script('build-index.ts'), [], { env });
    expect(built.code).toBe(0);
    const after = await runInProcess(further('chat.ts'), ['--quiet'], { env, input: 'exit\n' });
    expect(after.stdout).not.toContain('help-center');
  });
});

describe('a conversation deleted while its full chat is open', () => {
  it('is never written again: the chat says so and goes on in a new conversation', async () => {
    fake.reply({ text: 'First answer.' }, { text: 'Second answer.' });
    const child = startScript(further('chat.ts'), ['--quiet'], { env });
    const done = collect(child);
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stdin.write('First\n');
    await waitForOutput(child, 'Nimbus: First answer.');
    const id = idIn(stdout);
    const forgotten = await runInProcess(further('forget.ts'), [id], { env });
    expect(forgotten.stdout).toMatch(
      new RegExp(`^Deleted conversation ${id}: 2 messages and its trace file `),
    );
    child.stdin.end('Second\n');
    const result = await done;
    // The answer, then what happened, once, as every entry says it (whatHappened): naming the new one.
    expect(result.stdout).toMatch(
      new RegExp(
        `Nimbus: Second answer\\.\\n\\nThe conversation you were in had been deleted, so this question started a new one: ([0-9a-f]{32})\\.\\n`,
      ),
    );
    const next = result.stdout.match(/started a new one: ([0-9a-f]{32})/)![1];
    expect(next).not.toBe(id);
    expect(await query('SELECT id FROM conversations WHERE id = ?', [id])).toEqual([]);
    expect(existsSync(path.join(logs, 'conversations', `${id}.jsonl`))).toBe(false);
    expect((await loadRows(next)).map((r) => r.role)).toEqual(['user', 'assistant']);
    expect(result.stdout).toContain(
      `Resume later with: npx tsx part-06/going-further/chat.ts --resume=${next}`,
    );
  });
});

describe('npm run bench interrupted (going further)', () => {
  it('drops its scratch database on Ctrl-C', async () => {
    const child = startScript(further('ops/bench-memory.ts'), ['--runs=5'], { env });
    const done = collect(child);
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    await waitForOutput(child, 'Filling a conversation of 10 turns');
    const scratch = stderr.match(/scratch database (nimbus_bench_\w+)/)![1];
    expect(await databaseExists(scratch)).toBe(true);
    child.kill('SIGINT');
    const result = await done;
    expect(result.code).toBe(130);
    await waitUntil('the scratch database is gone', async () => !(await databaseExists(scratch)));
  });
});
