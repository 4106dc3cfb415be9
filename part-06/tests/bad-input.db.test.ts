// Whatever comes in — odd ids, hostile text, a missing database, a rate limit — gets one clear line and nothing half-saved (the core scripts; going further's limits through its own).
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase } from '../setup-database.ts';
import { dbSettings } from '../../shared/config.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';
import { API_ERROR_ANSWER } from '../agent.ts';
import { loadMessages } from '../memory.ts';

const script = (name: string) => fileURLToPath(new URL(`../${name}`, import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  env = { ...fake.env('gemini'), DB_NAME: db.name };
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

// (going further's forget.ts refuses one the same way: retention.db.test.ts)
describe('conversation ids are checked wherever they enter', () => {
  it.each([
    ['ask.ts', ['--conversation=ABCDEF0123456789ABCDEF0123456789', 'Hi'], '--conversation'],
    ['chat.ts', ['--resume=../../etc/passwd'], '--resume'],
    ['show-conversation.ts', ["1' OR '1'='1"], 'show-conversation'],
  ])('%s refuses a malformed id: one line, exit 2', async (name, args, where) => {
    const result = await runScript(script(name), args, { env, input: '' });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toMatch(
      new RegExp(
        `^${where} needs a conversation id: 32 lowercase hex characters \\(got ".*"\\)\\.$`,
      ),
    );
    expect(result.stdout).toBe('');
  });
});

describe('a database that cannot be reached', () => {
  it.each([
    [
      'wrong port',
      { DB_HOST: '127.0.0.1', DB_PORT: '9' },
      'Cannot reach MySQL at 127.0.0.1:9 (ECONNREFUSED). Start the database server (none yet? the Requirements in README.md at the repository root start one in one line), or check DB_HOST and DB_PORT in .env.',
    ],
    [
      'wrong password',
      { DB_USER: 'nimbus_no_such_user', DB_PASSWORD: 'wrong' },
      // Whatever server .env names: the sentence names it.
      `MySQL at ${dbSettings(process.env).host}:${dbSettings(process.env).port} refused user "nimbus_no_such_user". Check DB_USER and DB_PASSWORD in .env.`,
    ],
  ])(
    '%s: one line naming what to check, exit 1, and nothing asked',
    async (_, override, message) => {
      const before = fake.chats().length;
      const result = await runInProcess(script('chat.ts'), [], {
        env: { ...env, ...override },
        input: 'Where is order 1042?\n',
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`${message}\n`);
      expect(fake.chats()).toHaveLength(before);
    },
  );
});

describe('hostile and unusual text', () => {
  it('is stored and shown exactly as typed: long, unicode, emoji, quotes and SQL', async () => {
    const question = `Ünïcödé 日本語 🎧🔥 "quotes" 'apostrophes' \\backslash\\ %_ wildcards '); DROP TABLE messages; -- ${'long text '.repeat(380)}end`;
    fake.reply((view) => ({ text: `Got ${view.lastUserText.length} characters.` }));
    const chat = await runInProcess(script('chat.ts'), ['--quiet'], {
      env,
      input: `${question}\n`,
    });
    expect(chat.code).toBe(0);
    expect(chat.stdout).toContain(`Nimbus: Got ${question.length} characters.`);
    const id = chat.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
    expect((await loadMessages(id))[0]).toEqual({ role: 'user', content: question });
    const shown = await runInProcess(script('show-conversation.ts'), [id], { env });
    expect(shown.stdout).toContain(`user: ${question}`);
  });
});

describe('retries the learner can see', () => {
  it('shows the wait before retrying a rate limit, then answers', async () => {
    fake.reply({ error: { status: 429, retryDelay: '0.2s' } }, { text: 'Sorry for the wait!' });
    const chat = await runInProcess(script('chat.ts'), [], { env, input: 'Hello?\n' });
    expect(chat.stderr).toContain(
      '[step 1] rate limited by Gemini, retrying in 0.2 s… (retry 1 of 3)',
    );
    expect(chat.stdout).toContain('Nimbus: Sorry for the wait!');
  });

  it('says a daily quota will not come back by retrying', async () => {
    fake.reply({
      error: {
        status: 429,
        quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier',
        retryDelay: '0.2s',
      },
    });
    const chat = await runInProcess(script('chat.ts'), [], { env, input: 'Hello?\n' });
    expect(chat.stderr).toContain(
      "[step 1] provider error: Gemini's daily quota for gemini-fake is used up (429). Retrying will not help until it resets",
    );
    expect(chat.stderr).not.toContain('retrying in');
    expect(chat.stdout).toContain(`Nimbus: ${API_ERROR_ANSWER}`);
  });
});
