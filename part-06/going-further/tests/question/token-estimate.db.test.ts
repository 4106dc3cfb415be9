// A model server that reports no token counts (or counts that are none) cannot run past MAX_TOKENS_PER_RUN: the chat estimates, and says so once.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatWithTools, type Message } from '../../../../shared/llm/index.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type ScriptedReply,
} from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { CHARS_PER_TOKEN, RunSpending, TOKENS_ESTIMATED } from '../../terminal/run-budget.ts';

const CHAT = fileURLToPath(new URL('../../chat.ts', import.meta.url));
const ASK = fileURLToPath(new URL('../../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

const unreported: Array<[string, ScriptedReply['usage']]> = [
  ['no usage at all', 'none'],
  ['negative counts', { input: -500, output: -20 }],
];

describe.each(unreported)('a chat whose model server sends %s', (_, usage) => {
  it('ends at MAX_TOKENS_PER_RUN by an estimate, saying that it estimates', async () => {
    fake.requests.length = 0;
    fake.reply({ text: 'First answer.', usage });
    // One token: the first question's estimate passes it, as a counted one would.
    const run = await runInProcess(CHAT, ['--quiet'], {
      env: { ...fake.env('openai'), DB_NAME: db.name, MAX_TOKENS_PER_RUN: '1' },
      input: 'First question?\nSecond question?\n',
    });
    expect(run.code).toBe(0);
    expect(fake.chats()).toHaveLength(1);
    expect(run.stdout).toMatch(
      /Nimbus: First answer\.\n\nThis run has used [\d,]+ tokens, reaching its limit of 1 \(MAX_TOKENS_PER_RUN in \.env\), so the chat ends here\.\n/,
    );
    expect(run.stderr.split(TOKENS_ESTIMATED)).toHaveLength(2);
  });
});

describe('ask.ts, when the model server sends no counts', () => {
  it('says the tokens were not reported, not "0 tokens"', async () => {
    fake.reply({ text: 'An answer.', usage: 'none' });
    const run = await runInProcess(ASK, ['--quiet', 'Hello?'], {
      env: { ...fake.env('openai'), DB_NAME: db.name },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(
      '(answered after 1 step, tokens not reported by the model server)',
    );
  });
});

describe('the estimate', () => {
  it(`counts a token for ${CHARS_PER_TOKEN} characters of the request and reply, and is said once`, async () => {
    const spending = new RunSpending({ maxQuestions: 100, maxTokens: 1 });
    const callModel = spending.metered(chatWithTools);
    const question: Message[] = [{ role: 'user', content: 'x'.repeat(4_000) }];
    fake.reply({ text: 'One.', usage: 'none' }, { text: 'Two.', usage: 'none' });
    await callModel(fake.llm('gemini'), question);
    expect(spending.news()).toBe(TOKENS_ESTIMATED);
    await callModel(fake.llm('gemini'), question);
    expect(spending.news()).toBeUndefined();
    const used = Number(/used ([\d,]+) tokens/.exec(spending.spent()!)![1].replace(/,/g, ''));
    expect(used).toBeGreaterThanOrEqual(2 * 1_000);
    expect(used).toBeLessThan(2 * 1_100);
  });
});
