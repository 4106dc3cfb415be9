// The store chat.ts uses, against a real database: bounded loading equals the plain way, damaged
// rows are left out, what MariaDB would refuse is made storable, a deleted conversation is never written again,
// and a writer that lost its place in the conversation never mixes its turn into another's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { Message } from '../../../../shared/llm/index.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { buildContext, splitIntoTurns, type MemoryBudget } from '../../../context.ts';
import {
  loadMessages,
  newConversation,
  saveMessages,
  type Conversation,
  type StoredMessage,
} from '../../../memory.ts';
import { memoryEvent } from '../../../trace.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { fitNewestTurn } from '../../store/fit-results.ts';
import { loadRows } from '../../store/message-rows.ts';
import { ConversationDeleted, hardenedStore } from '../../store/hardened-store.ts';
import { MAX_STORED_CHARS } from '../../store/fit-message.ts';
import { readHistory, type Damage } from '../../store/read-history.ts';
import { randomConversation } from '../../../tests/random-conversations.ts';
import { DEFAULT_BUDGET } from '../../../tests/test-session.ts';

let db: ScratchDatabase;
beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(() => db.drop());

/** Saves through the plain store: rows exactly as given, for histories our own code would never write. */
const savePlain = (conversation: Conversation, messages: StoredMessage[]) =>
  saveMessages(
    conversation,
    messages.map((message) => ({ message })),
  );

/** The full history read defensively: what the bounded loader must agree with. */
async function readAll(id: string) {
  return readHistory(await loadRows(id));
}

/** A store, with the damaged rows it reported. */
function storeWithReports(budget: MemoryBudget = DEFAULT_BUDGET) {
  const damaged: Damage[][] = [];
  const unread: string[] = [];
  const store = hardenedStore(budget, {
    onDamaged: (_, d) => damaged.push(d),
    onOlderUnread: (id) => unread.push(id),
  });
  return { store, damaged, unread };
}

describe('bounded loading', () => {
  it('equals buildContext of the whole history, read defensively (its newest turn fitted when alone over budget), on random conversations of every shape', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const messages = randomConversation(seed, {
        maxTurns: seed % 3 === 0 ? 300 : 30,
        hugeChance: seed % 5 === 0 ? 0.1 : 0.02,
      });
      const conversation = newConversation(1);
      // A history that may start with a non-user message, saved as our code would never save it.
      await savePlain(conversation, messages as StoredMessage[]);
      const budget =
        seed % 2 ? DEFAULT_BUDGET : { maxChars: 2000 + seed * 100, recentTurns: 1 + (seed % 4) };
      // The plain way, and what the full Nimbus adds: a newest turn alone over budget is fitted.
      const full = fitNewestTurn(buildContext((await readAll(conversation.id)).messages, budget));
      const bounded = await hardenedStore(budget).loadContext(conversation);
      expect(bounded.messages, `seed ${seed}`).toEqual(full.messages);
      expect(bounded.chars, `seed ${seed}`).toBe(full.chars);
      const fates = (c: typeof full) => c.turns.filter((t) => t.fate !== 'dropped').length;
      expect(fates(bounded), `seed ${seed}`).toBe(fates(full));
      if (bounded.readAll) expect(bounded.turns.length, `seed ${seed}`).toBe(full.turns.length);
    }
  });

  it('equals the full load when damaged rows sit among the recent turns, and reports them once', async () => {
    const conversation = newConversation(1);
    const messages = randomConversation(7, { maxTurns: 12 }) as StoredMessage[];
    await savePlain(conversation, messages);
    // A call without its result and a result without its call, near the end.
    await savePlain(conversation, [
      { role: 'user', content: 'late question' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'lost', name: 'get_order_status', arguments: { order_id: 1 } }],
      },
      { role: 'tool', tool_call_id: 'nobody', name: 'get_order_status', content: '{}' },
      { role: 'assistant', content: 'late answer' },
    ]);
    const full = await readAll(conversation.id);
    const { store, damaged } = storeWithReports();
    const bounded = await store.loadContext(conversation);
    expect(bounded.messages).toEqual(buildContext(full.messages, DEFAULT_BUDGET).messages);
    expect(full.damaged).toHaveLength(2);
    expect(damaged).toEqual([full.damaged]);
  });

  it('reads only the newest turns of a long conversation', async () => {
    const conversation = newConversation(1);
    const turns: Message[] = [];
    for (let t = 0; t < 400; t++)
      turns.push(
        { role: 'user', content: `question ${t}` },
        { role: 'assistant', content: `answer ${t} ${'x'.repeat(200)}` },
      );
    await savePlain(conversation, turns as StoredMessage[]);
    // Damage the very first row. A loader that reads everything would notice; the bounded one never gets there.
    await query(
      "UPDATE messages SET data = JSON_OBJECT('role', 'user', 'content', 5) WHERE conversation_id = ? AND seq = 1",
      [conversation.id],
    );
    expect((await readAll(conversation.id)).damaged).toHaveLength(1);
    const { store, damaged, unread } = storeWithReports();
    const bounded = await store.loadContext(conversation);
    expect(damaged).toEqual([]);
    expect(bounded.readAll).toBe(false);
    expect(unread).toEqual([conversation.id]); // said, since the memory line counts only what was read
    expect(bounded.lastSeq).toBe(800);
    // The trace's memory line counts the turns read: a few dozen of the 400.
    const summary = memoryEvent(bounded).summary;
    expect(summary).toMatch(
      /^\d+ earlier turns — 2 full, \d+ compacted, \d+ dropped — [\d,]+ of 12,000 chars$/,
    );
    expect(Number(summary.split(' ')[0])).toBeLessThan(100);
  });
});

describe('what the store reads back', () => {
  it('leaves out a provider_raw that no longer matches its message, and keeps the message', async () => {
    const conversation = newConversation(1);
    const edited: StoredMessage = {
      role: 'assistant',
      content: 'Edited by hand.',
      provider_raw: { provider: 'openai', message: { role: 'assistant', content: 'Original' } },
    };
    await savePlain(conversation, [{ role: 'user', content: 'Hi' }, edited]);
    const context = await hardenedStore(DEFAULT_BUDGET).loadContext(conversation);
    expect(context.messages[1]).toEqual({ role: 'assistant', content: 'Edited by hand.' });
  });
});

describe('a deleted conversation', () => {
  it('is never written again: loading and saving both refuse it', async () => {
    const conversation = newConversation(1);
    const store = hardenedStore(DEFAULT_BUDGET);
    await store.saveStep(conversation, [{ message: { role: 'user', content: 'Hello' } }]);
    await query('DELETE FROM conversations WHERE id = ?', [conversation.id]);
    await expect(store.loadContext(conversation)).rejects.toThrow(ConversationDeleted);
    await expect(
      store.saveStep(conversation, [{ message: { role: 'user', content: 'x' } }]),
    ).rejects.toThrow(ConversationDeleted);
    expect(await loadMessages(conversation.id)).toEqual([]);
  });
});

describe('two writers in one conversation (the lock lost with its connection)', () => {
  it('never mix their turns: the one that lost its place continues in a turn of its own, its question repeated', async () => {
    const conversation = newConversation(1);
    await savePlain(conversation, [
      { role: 'user', content: 'Earlier' },
      { role: 'assistant', content: 'Earlier answer' },
    ]);
    // Two processes load the same conversation at the same moment: both think message 3 comes next.
    const moved: string[] = [];
    const writer = (who: 'A' | 'B') => ({
      store: hardenedStore(DEFAULT_BUDGET, { onMoved: () => moved.push(who) }),
      conversation: { ...conversation }, // each process has its own copy
      step: [
        { message: { role: 'user', content: `${who}: where is 1?` } },
        {
          message: {
            role: 'assistant',
            content: '',
            tool_calls: [{ id: `${who}1`, name: 'get_order_status', arguments: { order_id: 1 } }],
          },
        },
        {
          message: {
            role: 'tool',
            tool_call_id: `${who}1`,
            name: 'get_order_status',
            content: `"${who}"`,
          },
        },
      ] as Array<{ message: StoredMessage }>,
      answer: [{ message: { role: 'assistant', content: `${who}: shipped.` } as StoredMessage }],
    });
    const [a, b] = [writer('A'), writer('B')];
    await a.store.loadContext(a.conversation);
    await b.store.loadContext(b.conversation);
    await a.store.saveStep(a.conversation, a.step);
    await b.store.saveStep(b.conversation, b.step); // A took its place: B goes after A's step
    await a.store.saveStep(a.conversation, a.answer); // B took its place: a turn of A's own
    await b.store.saveStep(b.conversation, b.answer);
    expect(moved).toEqual(['B', 'A', 'B']);

    const history = await readAll(conversation.id);
    expect(history.damaged).toEqual([]);
    // Every turn after the first is one writer's: its question, its calls and results, its answer.
    const writerOf = (m: Message) => /(?<![A-Za-z])(A|B)(?![A-Za-z])/.exec(JSON.stringify(m))?.[1];
    for (const turn of splitIntoTurns(history.messages).slice(1)) {
      expect(new Set(turn.map(writerOf)), JSON.stringify(turn)).toEqual(
        new Set([writerOf(turn[0])]),
      );
    }
    // Nothing was lost: both steps and both answers are on record.
    const all = history.messages.map((m) => JSON.stringify(m)).join('\n');
    for (const piece of ['A: shipped.', 'B: shipped.', '"A1"', '"B1"'])
      expect(all).toContain(piece);
  });
});

describe('what cannot be stored as it is', () => {
  const store = hardenedStore(DEFAULT_BUDGET);
  const save = (conversation: Conversation, messages: StoredMessage[]) =>
    store.saveStep(
      conversation,
      messages.map((message) => ({ message })),
    );
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
