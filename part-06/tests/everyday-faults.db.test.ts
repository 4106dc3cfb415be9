// Ordinary faults lose nothing and end nothing: bad settings said first, saves that fail, odd text (the core chat); streamed text, the index at start, deletions under a chat (the full Nimbus).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase } from '../setup-database.ts';
import { ConfigError, dbSettings, llmSettings } from '../../shared/config.ts';
import { connectionOptions, query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { collect, startScript, waitForOutput } from '../../shared/testing/run-script.ts';
import { API_ERROR_ANSWER } from '../agent.ts';
import { memoryBudget } from '../context.ts';
import { loadMessages } from '../memory.ts';

const script = (name: string) => fileURLToPath(new URL(`../${name}`, import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;
let logs: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
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

describe('settings that cannot work are the first and only thing said', () => {
  it.each(['chat.ts', 'ask.ts'])(
    '%s without an API key: one line with where to get one, exit 1, nothing created',
    async (name) => {
      const unused = `nimbus_test_never_${Date.now().toString(36)}`;
      const run = await runInProcess(script(name), name === 'ask.ts' ? ['Hi'] : [], {
        env: { ...env, GEMINI_API_KEY: '', DB_NAME: unused },
        input: 'Hi\n',
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(
        'GEMINI_API_KEY is not set. Get a free key at https://aistudio.google.com/apikey and put it in .env\n',
      );
      expect(await databaseExists(unused)).toBe(false);
    },
  );

  it.each([
    ['a file', () => path.join(logs, 'a-file')],
    ['a special path', () => '/proc/nimbus-logs'],
  ])('LOG_DIR that is %s: one line naming it, exit 1, before anything else', async (_, dir) => {
    writeFileSync(path.join(logs, 'a-file'), '');
    const before = fake.chats().length;
    const run = await runInProcess(script('chat.ts'), [], {
      env: { ...env, LOG_DIR: dir() },
      input: 'Hi\n',
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `^Traces cannot be written to ${dir().replace(/[.]/g, '\\.')} \\([^)]+\\)\\. Set LOG_DIR in \\.env to a folder you can write to\\.\\n$`,
      ),
    );
    expect(fake.chats()).toHaveLength(before);
  });
});

describe('a memory budget or a time limit that cannot work', () => {
  const bad: Array<[string, string, () => unknown, string]> = [
    ['MEMORY_MAX_CHARS', 'abc', () => memoryBudget(process.env), 'of at least 1000'],
    ['MEMORY_MAX_CHARS', '999', () => memoryBudget(process.env), 'of at least 1000'],
    ['MEMORY_MAX_CHARS', '1e12', () => memoryBudget(process.env), 'of at least 1000'],
    ['MEMORY_RECENT_TURNS', '-1', () => memoryBudget(process.env), 'of at least 1'],
    ['LLM_TIMEOUT_SECONDS', '0', () => llmSettings(process.env), 'from 1 to 86400'],
    ['DB_TIMEOUT_SECONDS', '0', () => dbSettings(process.env), 'from 1 to 3600'],
  ];
  it.each(bad)('%s=%s is one sentence naming it', (name, value, read, range) => {
    const saved = process.env[name];
    Object.assign(process.env, fake.env('gemini'), { [name]: value });
    try {
      expect(read).toThrow(
        new ConfigError(
          `${name} must be a whole number ${range} (it is "${value}"). Fix it in .env.`,
        ),
      );
    } finally {
      process.env[name] = saved ?? '';
    }
  });

  it('is said by chat.ts at start, before anything is created or asked', async () => {
    const unused = `nimbus_test_never_${Date.now().toString(36)}`;
    const before = fake.chats().length;
    const run = await runInProcess(script('chat.ts'), [], {
      env: { ...env, MEMORY_MAX_CHARS: '1e12', DB_NAME: unused },
      input: 'Hi\n',
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'MEMORY_MAX_CHARS must be a whole number of at least 1000 (it is "1e12"). Fix it in .env.\n',
    );
    expect(await databaseExists(unused)).toBe(false);
    expect(fake.chats()).toHaveLength(before);
  });
});

describe('a trace that cannot be written mid-conversation', () => {
  it('is one warning; the answer is printed and the turn saved (a pipe nobody reads never blocks it)', async () => {
    fake.reply({ text: 'First answer.' }, { text: 'Second answer.' });
    const first = await runInProcess(script('chat.ts'), ['--quiet'], { env, input: 'First\n' });
    const conversation = idIn(first.stdout);
    // The conversation's trace file is replaced by a named pipe with no reader.
    const file = path.join(logs, 'conversations', `${conversation}.jsonl`);
    rmSync(file);
    execFileSync('mkfifo', [file]);
    const second = await runInProcess(script('chat.ts'), ['--quiet', `--resume=${conversation}`], {
      env,
      input: 'Second\n',
    });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('Nimbus: Second answer.');
    expect(second.stderr).toMatch(
      new RegExp(
        `^warning: could not write the trace .*${conversation}\\.jsonl \\(ENXIO\\); carrying on without it\\.\\n$`,
      ),
    );
    expect((await loadMessages(conversation)).map((m) => m.content)).toEqual([
      'First',
      'First answer.',
      'Second',
      'Second answer.',
    ]);
  });
});

describe('a save that fails', () => {
  it('still shows the answer, says in one line why it was not saved, and the chat goes on', async () => {
    fake.reply({ text: 'First answer.' });
    const first = await runInProcess(script('chat.ts'), ['--quiet'], { env, input: 'First\n' });
    const id = idIn(first.stdout);
    const admin = await mysql.createConnection({ ...connectionOptions(), database: db.name });
    await admin.beginTransaction();
    await admin.query('SELECT id FROM conversations WHERE id = ? FOR UPDATE', [id]); // held longer than a save waits
    fake.reply({ text: 'Answer while the database is busy.' }, { text: 'Answer after.' });
    const child = startScript(script('chat.ts'), ['--quiet', `--resume=${id}`], { env });
    const done = collect(child);
    try {
      child.stdin.write('Busy?\n');
      await waitForOutput(child, 'Not saved:');
    } finally {
      await admin.rollback();
      await admin.end();
    }
    child.stdin.end('Later?\n');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Nimbus: Answer while the database is busy.');
    expect(result.stderr).toMatch(
      /^Not saved: MySQL at .* was busy: another session held a lock for more than 5 s \(ER_LOCK_WAIT_TIMEOUT\), so nothing of this was written\. Try again in a moment\.$/m,
    );
    expect(result.stdout).toContain('Nimbus: Answer after.');
    expect((await loadMessages(id)).map((m) => m.content)).toEqual([
      'First',
      'First answer.',
      'Later?',
      'Answer after.',
    ]);
  });
});

describe.each(['gemini', 'openai'] as const)('a provider that never answers (%s)', (provider) => {
  it('is a provider error after LLM_TIMEOUT_SECONDS, retries included: the fallback answer, and the chat goes on', async () => {
    fake.reply(
      { text: 'never delivered', gate: new Promise(() => {}) },
      { text: 'Second answer.' },
    );
    const run = await runInProcess(script('chat.ts'), [], {
      env: { ...env, ...fake.env(provider), LLM_TIMEOUT_SECONDS: '1' },
      input: 'First?\nSecond?\n',
    });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(
      /\[step 1\] provider error: .* did not answer within 1 s \(LLM_TIMEOUT_SECONDS in \.env; retries included\)/,
    );
    expect(run.stdout).toContain(`Nimbus: ${API_ERROR_ANSWER}`);
    expect(run.stdout).toContain('Nimbus: Second answer.');
    expect(run.stdout).not.toContain('Cancelled');
  });
});

describe('the help-center index at the core chat’s start', () => {
  it('says once when it was built by another model, as Part 5 does, then nothing once rebuilt', async () => {
    await query(
      "UPDATE help_chunks SET embedding = x'00000000', embedding_model = 'some-other-model', dimensions = 1",
    );
    const run = await runInProcess(script('chat.ts'), ['--quiet'], { env, input: 'exit\n' });
    expect(run.stdout).toContain(
      'The help-center index was built with some-other-model, not fake-embedding-001, so search uses keywords until you rebuild it: npx tsx part-06/build-index.ts',
    );
    expect(run.code).toBe(0);
    const built = await runInProcess(script('build-index.ts'), [], { env });
    expect(built.code).toBe(0);
    const after = await runInProcess(script('chat.ts'), ['--quiet'], { env, input: 'exit\n' });
    expect(after.stdout).not.toContain('help-center');
  });
});

describe('a chat that ends without a question', () => {
  it('leaves no empty conversation behind', async () => {
    const [before] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM conversations');
    const run = await runInProcess(script('chat.ts'), [], { env, input: 'exit\n' });
    expect(run.stdout).toMatch(/Bye!\n$/);
    const [after] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM conversations');
    expect(after.n).toBe(before.n);
  });
});
