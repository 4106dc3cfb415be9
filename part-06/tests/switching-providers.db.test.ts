// A conversation started with one provider continues with the other, tool calls and all, in both directions.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type ProviderName,
} from '../../shared/testing/fake-provider.ts';
import { newConversation } from '../memory.ts';
import { ensureDatabase } from '../setup-database.ts';
import { coreSession } from './test-session.ts';

let fake: FakeProvider;
let db: ScratchDatabase;
beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});
afterEach(() => {
  expect(fake.chats().filter((r) => r.status !== 200)).toEqual([]);
});

/** One turn with a tool call, answered by `provider`. */
const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };
/** A conversation, asked with whichever provider each turn names. */
const newSession = () => newConversation(maya.id);

async function toolTurn(
  conversation: ReturnType<typeof newSession>,
  provider: ProviderName,
  orderId: number,
) {
  fake.reply(
    { tool_calls: [{ name: 'get_order_status', arguments: { order_id: orderId } }] },
    { text: `Order ${orderId} found (${provider}).` },
  );
  return coreSession(maya, fake.llm(provider), conversation).ask(`Where is order ${orderId}?`);
}

describe('switching providers mid-conversation', () => {
  it("Gemini → OpenAI → Gemini: each replays its own messages and rebuilds the other's", async () => {
    const conversation = newSession();
    await toolTurn(conversation, 'gemini', 1042);
    await toolTurn(conversation, 'openai', 1043);
    // OpenAI got Gemini's tool call rebuilt: an id, and the result matched to it.
    const openaiRequest = fake.chats().at(-2)!.body;
    const rebuilt = openaiRequest.messages.find((m: any) => m.role === 'assistant' && m.tool_calls);
    expect(rebuilt.tool_calls[0]).toMatchObject({
      type: 'function',
      function: { name: 'get_order_status', arguments: '{"order_id":1042}' },
    });
    expect(openaiRequest.messages[openaiRequest.messages.indexOf(rebuilt) + 1].tool_call_id).toBe(
      rebuilt.tool_calls[0].id,
    );
    expect(JSON.stringify(openaiRequest)).not.toContain('thoughtSignature');

    await toolTurn(conversation, 'gemini', 1044);
    // Back on Gemini: its own turn replayed verbatim (real signature), OpenAI's rebuilt with the documented dummy.
    const contents = fake
      .chats()
      .at(-1)!
      .body.contents.filter(
        (c: any) => c.role === 'model' && c.parts.some((p: any) => p.functionCall),
      );
    expect(contents.map((c: any) => c.parts[0].thoughtSignature)).toEqual([
      expect.stringMatching(/^sig-/),
      'skip_thought_signature_validator',
      expect.stringMatching(/^sig-/),
    ]);
  });

  it('OpenAI → Gemini → OpenAI', async () => {
    const conversation = newSession();
    await toolTurn(conversation, 'openai', 1030);
    await toolTurn(conversation, 'gemini', 1031);
    const geminiRequest = fake.chats().at(-2)!.body;
    const modelCalls = geminiRequest.contents.filter(
      (c: any) => c.role === 'model' && c.parts.some((p: any) => p.functionCall),
    );
    expect(modelCalls[0].parts[0]).toEqual({
      functionCall: { name: 'get_order_status', args: { order_id: 1030 } },
      thoughtSignature: 'skip_thought_signature_validator',
    });
    const outcome = await toolTurn(conversation, 'openai', 1032);
    expect(outcome.answer).toBe('Order 1032 found (openai).');
    const last = fake.chats().at(-1)!.body.messages;
    expect(last.filter((m: any) => m.role === 'tool')).toHaveLength(3);
  });
});
