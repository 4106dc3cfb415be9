// Ctrl-C reaches the tools: a step of 40 searches, each waiting on an embedding, stops at once, every call with a result.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { logDir } from '../../shared/config.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { waitUntil } from '../../shared/testing/wait-until.ts';
import { runAgent, type AgentOptions } from '../agent.ts';
import { DEFAULT_BUDGET } from '../context.ts';
import { buildIndex } from '../embedding-index.ts';
import { loadMessages, newConversation, plainStore } from '../memory.ts';
import { CANCELLED_CALL_ERROR } from '../safe-run-tool.ts';
import { ensureDatabase } from '../setup-database.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
/** An embedding that never comes: only Ctrl-C can end the wait. */
const never = new Promise<never>(() => {});
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  await buildIndex(fake.llm('gemini')); // so that search_help_center searches by meaning
});
beforeEach(() => {
  fake.requests.length = 0;
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

const embeddings = () => fake.requests.filter((request) => request.kind === 'embed');

describe.each(['gemini', 'openai'] as const)('Ctrl-C with %s', (provider) => {
  it('stops the running search and starts none of the others; the saved step is one the provider accepts', async () => {
    const conversation = newConversation(maya.id);
    const options: AgentOptions = {
      llm: fake.llm(provider),
      store: plainStore(DEFAULT_BUDGET),
      logDir: logDir(process.env),
      quiet: true,
    };
    const queries = Array.from({ length: 40 }, (_, i) => `refund question ${i + 1}`);
    fake.reply({
      tool_calls: queries.map((query) => ({ name: 'search_help_center', arguments: { query } })),
    });
    fake.holdEmbeddings(never);
    const controller = new AbortController();
    const question = runAgent('How do refunds work?', maya, conversation, {
      ...options,
      signal: controller.signal,
    });
    try {
      await waitUntil(
        'the first search waits for its embedding',
        async () => embeddings().length > 0,
      );
      controller.abort();
      expect((await question).outcome).toBe('cancelled');
    } finally {
      fake.holdEmbeddings(undefined);
    }
    // The search that was running gave up its request; no other search began.
    await waitUntil('the fake sees the embedding request go', async () => embeddings()[0].aborted);
    expect(embeddings()).toHaveLength(1);

    // Every call has its result, so the step could be saved, and it was.
    const saved = await loadMessages(conversation.id);
    const results = saved.filter((message) => message.role === 'tool');
    expect(results.map((message) => JSON.parse(message.content))).toEqual(
      queries.map(() => ({ error: CANCELLED_CALL_ERROR })),
    );

    // The next question sends that step back, and the provider accepts it.
    fake.reply({ text: 'Refunds take five working days.' });
    const next = await runAgent('And how long do they take?', maya, conversation, options);
    expect(next.outcome).toBe('answered');
    expect(fake.chats().at(-1)!.status).toBe(200);
  });
});
