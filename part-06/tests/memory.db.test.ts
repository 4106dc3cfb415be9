// Conversation memory against a real database: ids, round trips, atomic saves, concurrency, bounded loading.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import type { Message } from '../../shared/llm/index.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { buildContext, memoryBudget } from '../context.ts';
import { loadContext } from '../load-context.ts';
import {
  ConversationDeleted,
  findConversation,
  loadMessages,
  loadRows,
  newConversation,
  saveMessages,
  type Conversation,
  type StoredMessage,
} from '../memory.ts';
import { ensureDatabase } from '../setup-database.ts';
import { MAX_STORED_CHARS } from '../storable.ts';
import { randomConversation } from './random-conversations.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(() => db.drop());

const quietly = () => {};
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

  it('leaves out, on loading, a provider_raw that no longer matches its message, and keeps the message', async () => {
    const conversation = newConversation(1);
    const edited: StoredMessage = {
      role: 'assistant',
      content: 'Edited by hand.',
      provider_raw: { provider: 'openai', message: { role: 'assistant', content: 'Original' } },
    };
    await save(conversation, [{ role: 'user', content: 'Hi' }, edited]);
    expect((await loadMessages(conversation.id))[1]).toEqual({
      role: 'assistant',
      content: 'Edited by hand.',
    });
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

  it('refuses to save into a conversation that was deleted', async () => {
    const conversation = await stored();
    await query('DELETE FROM conversations WHERE id = ?', [conversation.id]);
    await expect(save(conversation, [{ role: 'user', content: 'x' }])).rejects.toThrow(
      ConversationDeleted,
    );
    const [row] = await query<Array<{ n: number }>>(
      'SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?',
      [conversation.id],
    );
    expect(row.n).toBe(0);
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

  it('never interleaves the messages of steps saved at the same time', async () => {
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
    for (let i = 0; i < loaded.length; i += 5) {
      const turn = (loaded[i].content as string).match(/^turn \d+/)![0];
      expect(loaded.slice(i, i + 5).every((m) => (m.content as string).startsWith(turn))).toBe(
        true,
      );
    }
  });
});

describe('loadContext', () => {
  it('equals buildContext(loadMessages(id)) on random conversations of every shape', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const messages = randomConversation(seed, {
        maxTurns: seed % 3 === 0 ? 300 : 30,
        hugeChance: seed % 5 === 0 ? 0.1 : 0.02,
      });
      const conversation = newConversation(1);
      // A history that may start with a non-user message, saved as our code would never save it.
      await save(conversation, messages as StoredMessage[]);
      const budget =
        seed % 2 ? memoryBudget() : { maxChars: 2000 + seed * 100, recentTurns: 1 + (seed % 4) };
      const full = buildContext(await loadMessages(conversation.id, quietly), budget);
      const bounded = await loadContext(conversation.id, budget, quietly);
      expect(bounded.messages, `seed ${seed}`).toEqual(full.messages);
      expect(bounded.chars, `seed ${seed}`).toBe(full.chars);
      if (bounded.readAll) expect(bounded.dropped, `seed ${seed}`).toBe(full.dropped);
    }
  });

  it('equals the full load when damaged rows sit among the recent turns', async () => {
    const conversation = newConversation(1);
    const id = conversation.id;
    const messages = randomConversation(7, { maxTurns: 12 }) as StoredMessage[];
    await save(conversation, messages);
    // A call without its result and a result without its call, near the end.
    await save(conversation, [
      { role: 'user', content: 'late question' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'lost', name: 'get_order_status', arguments: { order_id: 1 } }],
      },
      { role: 'tool', tool_call_id: 'nobody', name: 'get_order_status', content: '{}' },
      { role: 'assistant', content: 'late answer' },
    ]);
    const warnings: number[][] = [];
    const full = buildContext(await loadMessages(id, (_, d) => warnings.push(d.map((x) => x.id))));
    const bounded = await loadContext(id, memoryBudget(), (_, d) =>
      warnings.push(d.map((x) => x.id)),
    );
    expect(bounded.messages).toEqual(full.messages);
    expect(warnings[0]).toHaveLength(2);
    expect(warnings[1]).toEqual(warnings[0]);
  });

  it('reads only the newest turns of a long conversation', async () => {
    const conversation = newConversation(1);
    const id = conversation.id;
    const turns: Message[] = [];
    for (let t = 0; t < 400; t++)
      turns.push(
        { role: 'user', content: `question ${t}` },
        { role: 'assistant', content: `answer ${t} ${'x'.repeat(200)}` },
      );
    await save(conversation, turns as StoredMessage[]);
    // Damage the very first row. A loader that reads everything would notice; loadContext never gets there.
    await query(
      "UPDATE messages SET data = JSON_OBJECT('role', 'user', 'content', 5) WHERE id = (SELECT MIN(id) FROM (SELECT id FROM messages WHERE conversation_id = ?) AS t)",
      [id],
    );
    const fullWarnings: unknown[] = [];
    const boundedWarnings: unknown[] = [];
    const full = buildContext(await loadMessages(id, (_, d) => fullWarnings.push(d)));
    const bounded = await loadContext(id, memoryBudget(), (_, d) => boundedWarnings.push(d));
    expect(fullWarnings).toHaveLength(1);
    expect(boundedWarnings).toHaveLength(0);
    expect(bounded.messages).toEqual(full.messages);
    expect(bounded.readAll).toBe(false);
  });
});

describe('what cannot be stored as it is', () => {
  const roundTrip = async (message: StoredMessage) => {
    const conversation = newConversation(1);
    await save(conversation, [{ role: 'user', content: 'q' }, message]);
    const [, row] = await loadRows(conversation.id);
    return { loaded: (await loadMessages(conversation.id))[1], note: row.storage_note };
  };

  it('replaces a lone half of an emoji, which MariaDB would refuse, and says so', async () => {
    const cut = '🎧'.slice(0, 1); // what cutting a string in the middle of an emoji leaves
    const { loaded, note } = await roundTrip({
      role: 'assistant',
      content: `Headphones ${cut}`,
      provider_raw: {
        provider: 'openai',
        message: { role: 'assistant', content: `Headphones ${cut}` },
      },
    });
    expect(loaded).toEqual({
      role: 'assistant',
      content: 'Headphones \uFFFD',
      provider_raw: {
        provider: 'openai',
        message: { role: 'assistant', content: 'Headphones \uFFFD' },
      },
    });
    expect(note).toBe('broken characters replaced');
  });

  it('cuts JSON nested deeper than MariaDB accepts, keeping the message and its call', async () => {
    let args: Record<string, unknown> = { order_id: 1043 };
    for (let i = 0; i < 40; i++) args = { deeper: args };
    const call: StoredMessage = {
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'deep', name: 'get_order_status', arguments: args }],
      provider_raw: {
        provider: 'gemini',
        message: { role: 'model', parts: [{ functionCall: { name: 'get_order_status', args } }] },
      },
    };
    const conversation = newConversation(1);
    await save(conversation, [
      { role: 'user', content: 'q' },
      call,
      { role: 'tool', tool_call_id: 'deep', name: 'get_order_status', content: '{}' },
    ]);
    const [, row] = await loadRows(conversation.id);
    expect(row.storage_note).toMatch(
      /^provider_raw left out .*; values nested deeper than 31 levels replaced$/,
    );
    const loaded = (await loadMessages(conversation.id))[1] as {
      tool_calls: Array<{ id: string }>;
      provider_raw?: unknown;
    };
    expect(loaded.tool_calls[0].id).toBe('deep');
    expect(loaded.provider_raw).toBeUndefined();
    expect(JSON.stringify(loaded)).toContain('(nested too deeply to store)');
  });

  it('stores a huge answer shortened, once, instead of failing the whole save', async () => {
    const huge = 'x'.repeat(9_000_000); // twice that (content and provider_raw) is more than MariaDB's 16 MB packet
    const { loaded, note } = await roundTrip({
      role: 'assistant',
      content: huge,
      provider_raw: { provider: 'openai', message: { role: 'assistant', content: huge } },
    });
    expect(JSON.stringify(loaded).length).toBeLessThanOrEqual(MAX_STORED_CHARS);
    expect((loaded as { provider_raw?: unknown }).provider_raw).toBeUndefined();
    expect(note).toMatch(
      /^provider_raw left out \(too large or too deeply nested\); content shortened from 9000000 to \d+ characters$/,
    );
  });
});
