// The plain conversation store against a real database: ids, owners, round trips, atomic saves, order under concurrency.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import {
  findConversation,
  loadMessages,
  newConversation,
  saveMessages,
  type Conversation,
  type StoredMessage,
} from '../memory.ts';
import { ensureDatabase } from '../setup-database.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(() => db.drop());

const save = (conversation: Conversation, messages: StoredMessage[]) =>
  saveMessages(
    conversation,
    messages.map((message) => ({ message })),
  );
/** A conversation of the demo customer, already stored (as after its first saved turn). */
async function stored(): Promise<Conversation> {
  const conversation = newConversation(1);
  await save(conversation, [
    { role: 'user', content: 'Hello' },
    { role: 'assistant', content: 'Hi!' },
  ]);
  await query('DELETE FROM messages WHERE conversation_id = ?', [conversation.id]);
  return conversation;
}

const everyKind: StoredMessage[] = [
  {
    role: 'user',
    content: `Refund for "order" 1043? It's broken 😡 — 返金 🎧'); DROP TABLE messages; -- \\ ${'long '.repeat(2000)}`,
  },
  {
    role: 'assistant',
    content: '',
    tool_calls: [
      {
        id: 'call_1',
        name: 'check_refund_eligibility',
        arguments: { order_id: 1043, nested: { list: [1, 'two', null] } },
      },
    ],
    provider_raw: {
      provider: 'gemini',
      message: {
        role: 'model',
        parts: [
          {
            functionCall: {
              name: 'check_refund_eligibility',
              args: { order_id: 1043, nested: { list: [1, 'two', null] } },
            },
            thoughtSignature: 'c2ln/+==',
          },
        ],
      },
    },
  },
  {
    role: 'tool',
    tool_call_id: 'call_1',
    name: 'check_refund_eligibility',
    content: '{"eligible":false,"reason":"Paid 20 days ago."}',
  },
  {
    role: 'assistant',
    content: 'Sorry — not eligible. ✓',
    provider_raw: {
      provider: 'openai',
      message: { role: 'assistant', content: 'Sorry — not eligible. ✓', refusal: null },
    },
  },
];

describe('conversations', () => {
  it('get unguessable ids: 32 lowercase hex characters, all different, and no row until the first save', async () => {
    const conversations = Array.from({ length: 50 }, () => newConversation(1));
    for (const c of conversations) expect(c.id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(conversations.map((c) => c.id)).size).toBe(50);
    expect(await findConversation(conversations[0].id, 1)).toBeUndefined();
    await save(conversations[0], [{ role: 'user', content: 'Hi' }]);
    expect(conversations[0].saved).toBe(true);
    expect(await findConversation(conversations[0].id, 1)).toEqual({
      id: conversations[0].id,
      customerId: 1,
      saved: true,
    });
  });

  it("belong to one customer: another customer's conversation is not found, like a missing one", async () => {
    const conversation = newConversation(1);
    await save(conversation, [{ role: 'user', content: 'Mine' }]);
    expect(await findConversation(conversation.id, 2)).toBeUndefined();
    expect(await findConversation('0'.repeat(32), 2)).toBeUndefined();
  });
});

describe('saveMessages and loadMessages', () => {
  it('round-trips every message kind exactly, provider_raw, unicode and emoji included, in order', async () => {
    const conversation = newConversation(1);
    await save(conversation, everyKind);
    await save(conversation, [
      { role: 'user', content: 'And 1042?' },
      { role: 'assistant', content: 'Shipped.' },
    ]);
    expect(await loadMessages(conversation.id)).toEqual([
      ...everyKind,
      { role: 'user', content: 'And 1042?' },
      { role: 'assistant', content: 'Shipped.' },
    ]);
  });

  it('bumps updated_at with every saved turn', async () => {
    const conversation = await stored();
    await query('UPDATE conversations SET updated_at = NOW(3) - INTERVAL 1 DAY WHERE id = ?', [
      conversation.id,
    ]);
    await save(conversation, [{ role: 'user', content: 'Hello' }]);
    const [row] = await query<Array<{ age: number }>>(
      'SELECT TIMESTAMPDIFF(SECOND, updated_at, NOW(3)) AS age FROM conversations WHERE id = ?',
      [conversation.id],
    );
    expect(row.age).toBeLessThan(60);
  });

  it('saves all of a step or none of it', async () => {
    const conversation = await stored();
    await query('UPDATE conversations SET updated_at = NOW(3) - INTERVAL 1 DAY WHERE id = ?', [
      conversation.id,
    ]);
    // The last message cannot be stored (the role column has no "system"): the statement fails as a whole.
    const step = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'second' },
      { role: 'system', content: 'x' },
    ] as StoredMessage[];
    await expect(save(conversation, step)).rejects.toThrow();
    expect(await loadMessages(conversation.id)).toEqual([]);
    const [row] = await query<Array<{ age: number }>>(
      'SELECT TIMESTAMPDIFF(HOUR, updated_at, NOW(3)) AS age FROM conversations WHERE id = ?',
      [conversation.id],
    );
    expect(row.age).toBe(24); // the bump was rolled back too
  });

  it('deleting a conversation deletes its messages', async () => {
    const conversation = newConversation(1);
    await save(conversation, everyKind);
    await query('DELETE FROM conversations WHERE id = ?', [conversation.id]);
    const [row] = await query<Array<{ n: number }>>(
      'SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?',
      [conversation.id],
    );
    expect(row.n).toBe(0);
  });

  it('numbers the messages of steps saved at the same time one step after another, never interleaved', async () => {
    const conversation = await stored();
    const turns = Array.from({ length: 24 }, (_, t) =>
      Array.from({ length: 5 }, (_, i): StoredMessage =>
        i === 0
          ? { role: 'user', content: `turn ${t}` }
          : { role: 'assistant', content: `turn ${t} part ${i}` },
      ),
    );
    await Promise.all(turns.map((turn) => save(conversation, turn)));
    const loaded = await loadMessages(conversation.id);
    expect(loaded).toHaveLength(120);
    const [{ seqs }] = await query<Array<{ seqs: string }>>(
      'SELECT GROUP_CONCAT(seq ORDER BY seq) AS seqs FROM messages WHERE conversation_id = ?',
      [conversation.id],
    );
    expect(seqs).toBe(Array.from({ length: 120 }, (_, i) => i + 1).join(','));
    for (let i = 0; i < loaded.length; i += 5) {
      const turn = (loaded[i].content as string).match(/^turn \d+/)![0];
      expect(loaded.slice(i, i + 5).every((m) => (m.content as string).startsWith(turn))).toBe(
        true,
      );
    }
  });
});
