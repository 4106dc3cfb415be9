// Conversation memory against a real database: ids, round trips, atomic saves, concurrency, bounded loading.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseError, query } from '../../shared/db.ts';
import type { Message } from '../../shared/llm/index.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { buildContext } from '../context.ts';
import {
  conversationExists,
  loadContext,
  loadMessages,
  newConversation,
  saveMessages,
  type StoredMessage,
} from '../memory.ts';
import { setupDatabase } from '../setup-database.ts';
import { randomConversation } from './random-conversations.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await setupDatabase(() => {});
});
afterAll(() => db.drop());

const quietly = () => {};

const everyKind: StoredMessage[] = [
  { role: 'user', content: `Refund for "order" 1043? It's broken 😡 — 返金 🎧'); DROP TABLE messages; -- \\ ${'long '.repeat(2000)}` },
  {
    role: 'assistant',
    content: '',
    tool_calls: [{ id: 'call_1', name: 'check_refund_eligibility', arguments: { order_id: 1043, nested: { list: [1, 'two', null] } } }],
    provider_raw: {
      provider: 'gemini',
      message: { role: 'model', parts: [{ functionCall: { name: 'check_refund_eligibility', args: { order_id: 1043 } }, thoughtSignature: 'c2ln/+==' }] },
    },
  },
  { role: 'tool', tool_call_id: 'call_1', name: 'check_refund_eligibility', content: '{"eligible":false,"reason":"Paid 20 days ago."}' },
  { role: 'assistant', content: 'Sorry — not eligible. ✓', provider_raw: { provider: 'openai', message: { role: 'assistant', content: 'Sorry', refusal: null } } },
];

describe('conversations', () => {
  it('get unguessable ids: 32 lowercase hex characters, all different', async () => {
    const ids = await Promise.all(Array.from({ length: 50 }, () => newConversation()));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(50);
    expect(await conversationExists(ids[0])).toBe(true);
    expect(await conversationExists('0'.repeat(32))).toBe(false);
  });
});

describe('saveMessages and loadMessages', () => {
  it('round-trips every message kind exactly, provider_raw, unicode and emoji included, in order', async () => {
    const id = await newConversation();
    await saveMessages(id, everyKind);
    await saveMessages(id, [{ role: 'user', content: 'And 1042?' }]);
    expect(await loadMessages(id)).toEqual([...everyKind, { role: 'user', content: 'And 1042?' }]);
  });

  it('bumps updated_at with every saved turn', async () => {
    const id = await newConversation();
    await query('UPDATE conversations SET updated_at = NOW(3) - INTERVAL 1 DAY WHERE id = ?', [id]);
    await saveMessages(id, [{ role: 'user', content: 'Hello' }]);
    const [row] = await query<Array<{ age: number }>>('SELECT TIMESTAMPDIFF(SECOND, updated_at, NOW(3)) AS age FROM conversations WHERE id = ?', [id]);
    expect(row.age).toBeLessThan(60);
  });

  it('saves all of a turn or none of it', async () => {
    const id = await newConversation();
    await query('UPDATE conversations SET updated_at = NOW(3) - INTERVAL 1 DAY WHERE id = ?', [id]);
    // The last message cannot be stored (the role column has no "system"): the statement fails as a whole.
    const turn = [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'second' }, { role: 'system', content: 'x' }] as StoredMessage[];
    await expect(saveMessages(id, turn)).rejects.toThrow();
    expect(await loadMessages(id)).toEqual([]);
    const [row] = await query<Array<{ age: number }>>('SELECT TIMESTAMPDIFF(HOUR, updated_at, NOW(3)) AS age FROM conversations WHERE id = ?', [id]);
    expect(row.age).toBe(24); // the bump was rolled back too
  });

  it('refuses to save into a conversation that was deleted', async () => {
    const id = await newConversation();
    await query('DELETE FROM conversations WHERE id = ?', [id]);
    await expect(saveMessages(id, [{ role: 'user', content: 'x' }])).rejects.toThrow(DatabaseError);
    const [row] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?', [id]);
    expect(row.n).toBe(0);
  });

  it('deleting a conversation deletes its messages', async () => {
    const id = await newConversation();
    await saveMessages(id, everyKind);
    await query('DELETE FROM conversations WHERE id = ?', [id]);
    const [row] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?', [id]);
    expect(row.n).toBe(0);
  });

  it('never interleaves turns saved at the same time into one conversation', async () => {
    const id = await newConversation();
    const turns = Array.from({ length: 24 }, (_, t) =>
      Array.from({ length: 5 }, (_, i): StoredMessage => (i === 0 ? { role: 'user', content: `turn ${t}` } : { role: 'assistant', content: `turn ${t} part ${i}` })),
    );
    await Promise.all(turns.map((turn) => saveMessages(id, turn)));
    const loaded = await loadMessages(id);
    expect(loaded).toHaveLength(120);
    for (let i = 0; i < loaded.length; i += 5) {
      const turn = (loaded[i].content as string).match(/^turn \d+/)![0];
      expect(loaded.slice(i, i + 5).every((m) => (m.content as string).startsWith(turn))).toBe(true);
    }
  });
});

describe('loadContext', () => {
  it('equals buildContext(loadMessages(id)) on random conversations of every shape', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const messages = randomConversation(seed, { maxTurns: seed % 3 === 0 ? 300 : 30, hugeChance: seed % 5 === 0 ? 0.1 : 0.02 });
      const id = await newConversation();
      // A history that starts with a non-user message, saved as our code would never save it.
      await saveMessages(id, messages as StoredMessage[]);
      const full = buildContext(await loadMessages(id, quietly));
      const bounded = await loadContext(id, quietly);
      expect(bounded.messages, `seed ${seed}`).toEqual(full.messages);
      expect(bounded.chars, `seed ${seed}`).toBe(full.chars);
    }
  });

  it('equals the full load when damaged rows sit among the recent turns', async () => {
    const id = await newConversation();
    const messages = randomConversation(7, { maxTurns: 12 }) as StoredMessage[];
    await saveMessages(id, messages);
    // A call without its result and a result without its call, near the end.
    await saveMessages(id, [
      { role: 'user', content: 'late question' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'lost', name: 'get_order_status', arguments: { order_id: 1 } }] },
      { role: 'tool', tool_call_id: 'nobody', name: 'get_order_status', content: '{}' },
      { role: 'assistant', content: 'late answer' },
    ]);
    const warnings: number[][] = [];
    const full = buildContext(await loadMessages(id, (_, d) => warnings.push(d.map((x) => x.id))));
    const bounded = await loadContext(id, (_, d) => warnings.push(d.map((x) => x.id)));
    expect(bounded.messages).toEqual(full.messages);
    expect(warnings[0]).toHaveLength(2);
    expect(warnings[1]).toEqual(warnings[0]);
  });

  it('reads only the newest turns of a long conversation', async () => {
    const id = await newConversation();
    const turns: Message[] = [];
    for (let t = 0; t < 400; t++) turns.push({ role: 'user', content: `question ${t}` }, { role: 'assistant', content: `answer ${t} ${'x'.repeat(200)}` });
    await saveMessages(id, turns as StoredMessage[]);
    // Damage the very first row. A loader that reads everything would notice; loadContext never gets there.
    await query("UPDATE messages SET data = JSON_OBJECT('role', 'user', 'content', 5) WHERE id = (SELECT MIN(id) FROM (SELECT id FROM messages WHERE conversation_id = ?) AS t)", [id]);
    const fullWarnings: unknown[] = [];
    const boundedWarnings: unknown[] = [];
    const full = buildContext(await loadMessages(id, (_, d) => fullWarnings.push(d)));
    const bounded = await loadContext(id, (_, d) => boundedWarnings.push(d));
    expect(fullWarnings).toHaveLength(1);
    expect(boundedWarnings).toHaveLength(0);
    expect(bounded.messages).toEqual(full.messages);
  });
});
