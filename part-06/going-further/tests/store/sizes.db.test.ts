// A tool call whose arguments are larger than a database packet neither fails the save nor loses the ticket's step.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { logDir } from '../../../../shared/config.ts';
import { query } from '../../../../shared/db.ts';
import type { AssistantMessage } from '../../../../shared/llm/index.ts';
import { ARGUMENTS_TOO_LONG } from '../../../../shared/llm/reply-limits.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runAgent } from '../../../agent.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { loadMessages, newConversation } from '../../../memory.ts';
import { loadRows } from '../../store/message-rows.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { hardenedStore } from '../../store/hardened-store.ts';
import { MAX_STORED_CHARS } from '../../store/fit-message.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
let fake: FakeProvider;
let db: ScratchDatabase;
/** Arguments a megabyte longer than the largest statement the server accepts (max_allowed_packet). */
let huge: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  const [{ packet }] = await query<Array<{ packet: number }>>(
    'SELECT @@max_allowed_packet AS packet',
  );
  huge = 'x'.repeat(Number(packet) + 1_000_000);
});
beforeEach(async () => {
  await query("UPDATE tickets SET status = 'closed'"); // each test opens its ticket afresh
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/** Every stored row of the conversation fits: none is larger than MAX_STORED_CHARS. */
async function expectRowsWithinLimit(conversationId: string) {
  const rows = await loadRows(conversationId);
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) expect(row.data.length).toBeLessThanOrEqual(MAX_STORED_CHARS);
}

describe.each(['gemini', 'openai'] as const)('a model writing too much, with %s', (provider) => {
  it('has its oversized call refused and told; the step with the ticket is saved, every row within the limit', async () => {
    fake.reply(
      {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: { category: 'refund', summary: 'Refund for order 1042.', order_id: 1042 },
          },
          { name: 'get_order_status', arguments: { order_id: 1043, details: huge } },
        ],
      },
      (view) => ({ text: `Done: ${JSON.stringify(view.toolResults.map((r) => r.result))}` }),
    );
    const conversation = newConversation(maya.id);
    const result = await runAgent(
      'Please open a refund ticket for order 1042.',
      maya,
      conversation,
      {
        llm: fake.llm(provider),
        store: hardenedStore(DEFAULT_BUDGET),
        logDir: logDir(process.env),
        quiet: true,
      },
    );
    expect(result.saveError).toBeUndefined();
    expect(result.outcome).toBe('answered');
    // The model was told why its second call did not run.
    expect(fake.chats()[1].view!.toolResults[1].result).toEqual({ error: ARGUMENTS_TOO_LONG });

    const [, calls, ticket, refused, answer] = await loadMessages(conversation.id);
    expect((calls as AssistantMessage).tool_calls?.map((call) => call.name)).toEqual([
      'create_support_ticket',
      'get_order_status',
    ]);
    expect(JSON.parse((ticket as { content: string }).content)).toMatchObject({ created: true });
    expect(JSON.parse((refused as { content: string }).content)).toEqual({
      error: ARGUMENTS_TOO_LONG,
    });
    expect(answer).toMatchObject({ role: 'assistant' });
    await expectRowsWithinLimit(conversation.id);
  });
});

describe('storable', () => {
  it('saves a step whose call arguments pass the packet limit, wherever they came from: the arguments are left out, noted', async () => {
    const conversation = newConversation(maya.id);
    const call = { id: 'call_1', name: 'get_order_status', arguments: { details: huge } };
    await hardenedStore(DEFAULT_BUDGET).saveStep(conversation, [
      { message: { role: 'user', content: 'Where is order 1043?' } },
      { message: { role: 'assistant', content: '', tool_calls: [call] } },
      {
        message: { role: 'tool', tool_call_id: 'call_1', name: call.name, content: '{}' },
      },
    ]);
    const [, stored] = await loadMessages(conversation.id);
    expect(stored).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_1', name: 'get_order_status', arguments: {} }],
    });
    const rows = await loadRows(conversation.id);
    expect(rows[1].storage_note).toBe('arguments of 1 tool call left out');
    await expectRowsWithinLimit(conversation.id);
  });
});
