// A piped chat run is bounded: a huge line is refused without being echoed, an answer's terminal output has a limit, and the run stops at its budget.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatWithTools, type Message } from '../../../../shared/llm/index.ts';
import { ANSWER_CUT_MARKER, MAX_ANSWER_CHARS } from '../../../../shared/llm/reply-limits.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runScript, type ScriptResult } from '../../../../shared/testing/run-script.ts';
import { tooLong } from '../../question/question-limit.ts';
import { RunSpending } from '../../terminal/run-budget.ts';

const CHAT = fileURLToPath(new URL('../../chat.ts', import.meta.url));
const HUGE_LINE = 5_000_000;
let fake: FakeProvider;
let db: ScratchDatabase;
/** One run, piped: a 5 MB line, then three questions, with MAX_QUESTIONS_PER_RUN=2. */
let run: ScriptResult;
/** The model calls that run made. */
let asked: number;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  // The first answer is five times longer than an answer may be, streamed in ten pieces.
  fake.reply({ text: Array.from({ length: 10 }, () => 'y'.repeat(MAX_ANSWER_CHARS / 2)) });
  fake.reply({ text: 'Short answer.' });
  run = await runScript(CHAT, ['--quiet'], {
    env: { ...fake.env('gemini'), DB_NAME: db.name, MAX_QUESTIONS_PER_RUN: '2' },
    input: `${'x'.repeat(HUGE_LINE)}\nFirst question?\nSecond question?\nThird question?\n`,
  });
  asked = fake.chats().length;
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe('a piped chat run', () => {
  it('refuses a line over the question limit with its length, echoing only its start', () => {
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`${tooLong(HUGE_LINE)}\n`);
    expect(run.stdout).toContain(`You: ${'x'.repeat(60)}… (5,000,000 characters)\n`);
    expect(run.stdout).not.toContain('x'.repeat(61));
  });

  it('prints no more of an answer than MAX_ANSWER_CHARS, then says it was cut', () => {
    expect(run.stdout).toContain(`Nimbus: ${'y'.repeat(MAX_ANSWER_CHARS)}${ANSWER_CUT_MARKER}\n`);
    expect(run.stdout).not.toContain('y'.repeat(MAX_ANSWER_CHARS + 1));
  });

  it('stops after MAX_QUESTIONS_PER_RUN questions, says so in one sentence, and how to resume', () => {
    expect(asked).toBe(2);
    expect(run.stdout).toMatch(
      /Nimbus: Short answer\.\n\nThis run has asked its 2 questions \(MAX_QUESTIONS_PER_RUN in \.env\), so the chat ends here\.\nBye! Resume later with: .*going-further\/chat\.ts --resume=[0-9a-f]{32}\n$/,
    );
    expect(run.stdout).not.toContain('Third question?');
  });
});

describe('the run budget', () => {
  it('ends the run once its model calls have used MAX_TOKENS_PER_RUN tokens', async () => {
    const spending = new RunSpending({ maxQuestions: 100, maxTokens: 1000 });
    const callModel = spending.metered(chatWithTools);
    const question: Message[] = [{ role: 'user', content: 'Where is my order?' }];
    fake.reply(
      { text: 'One.', usage: { input: 600, output: 100 } },
      { text: 'Two.', usage: { input: 250, output: 60 } },
    );
    await callModel(fake.llm('openai'), question);
    expect(spending.spent()).toBeUndefined();
    await callModel(fake.llm('openai'), question);
    expect(spending.spent()).toBe(
      'This run has used 1,010 tokens, reaching its limit of 1,000 (MAX_TOKENS_PER_RUN in .env), so the chat ends here.',
    );
    expect(spending.news()).toBeUndefined(); // every count was reported: nothing was estimated
  });
});
