// "Please forget everything you know about me": notes and conversations go, this one included, nothing comes back, and the answer says what the store keeps.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { whereIs as findText } from '../../../../shared/testing/where-is.ts';
import {
  startFakeProvider,
  type ChatView,
  type FakeProvider,
  type ScriptedReply,
} from '../../../../shared/testing/fake-provider.ts';
import { runAgent } from '../../../agent.ts';
import { DEFAULT_BUDGET } from '../../../context.ts';
import { newConversation, type Conversation } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { storeAndTools } from '../../question/agent-options.ts';
import { withConversationLock } from '../../question/lease.ts';
import { allNotes } from '../../notes/notes-queries.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { ConversationDeleted } from '../../store/hardened-store.ts';
import { forgetCustomer } from '../../privacy/delete-conversations.ts';

let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-forget-everything-'));
});
afterAll(async () => {
  rmSync(logs, { recursive: true, force: true });
  await fake.close();
  await db.drop();
});

async function newCustomer(): Promise<Customer> {
  const email = `forget-${randomBytes(4).toString('hex')}@example.com`;
  const inserted = await query<ResultSetHeader>(
    "INSERT INTO customers (name, email) VALUES ('Test Customer', ?)",
    [email],
  );
  return { id: inserted.insertId, name: 'Test Customer', email };
}

/** A conversation asked the way going-further/chat.ts asks: its store, notes and tools, one question at a time. */
function chat(customer: Customer, conversation: Conversation = newConversation(customer.id)) {
  const agent = { llm: fake.llm('gemini'), logDir: logs, quiet: true };
  const options = { ...agent, ...storeAndTools(DEFAULT_BUDGET, 1500, agent) };
  return {
    conversation,
    ask: (question: string) =>
      withConversationLock(conversation, () => runAgent(question, customer, conversation, options)),
  };
}

const call = (name: string, args: Record<string, unknown> = {}): ScriptedReply => ({
  tool_calls: [{ name, arguments: args }],
});
/** A model that answers with the results it was given, so a test reads them in the answer. */
const echo = (view: ChatView) => ({ text: JSON.stringify(view.toolResults.map((r) => r.result)) });

/** Every place the text could hide in this file's database and log folder. */
const whereIs = (text: string) => findText(db.name, logs, text);

/** A customer who said `secret` in an earlier conversation, kept a note of it, and has a support ticket. */
async function customerWithHistory() {
  const customer = await newCustomer();
  const secret = `locker${randomBytes(3).toString('hex')}`;
  const earlier = chat(customer);
  fake.reply(call('remember_note', { text: `My locker code is ${secret}.` }), {
    text: `Noted: ${secret}.`,
  });
  await earlier.ask(`Please remember my locker code ${secret}.`);
  const ticket = await query<ResultSetHeader>(
    "INSERT INTO tickets (customer_id, category, summary) VALUES (?, 'other', 'Call back')",
    [customer.id],
  );
  expect(await whereIs(secret)).toEqual(
    expect.arrayContaining(['table customer_notes', 'table messages']),
  );
  return { customer, secret, earlier, ticketId: ticket.insertId };
}

describe('forget everything', () => {
  it('deletes the notes and every conversation, this one too; the next search finds nothing; the answer names what the store keeps', async () => {
    const { customer, secret, ticketId } = await customerWithHistory();
    const asking = chat(customer);
    fake.reply(call('forget_everything'), echo);
    const said = await asking.ask('Please forget everything you know about me.');

    expect(JSON.parse(said.answer)).toEqual([
      {
        deleted: { notes: 1, earlier_conversations: 1, this_conversation: true },
        kept: `Their orders and refunds and support tickets #${ticketId}: the store's records, which it must keep.`,
        note: 'Nothing of this conversation is kept any more, not even your answer to this question: the next question starts afresh.',
      },
    ]);
    // The answer is given, and not stored: nothing of this question came back after the erasure.
    expect(said.saveError).toMatch(/^Not saved: This conversation was deleted or taken over/);
    expect(await whereIs(secret)).toEqual([]);
    expect(await whereIs('forget everything')).toEqual([]);
    expect(await whereIs(asking.conversation.id)).toEqual([]);
    expect(await query('SELECT id FROM tickets WHERE customer_id = ?', [customer.id])).toEqual([
      { id: ticketId },
    ]);

    // Her next search of past conversations: nothing of what she asked to forget.
    const later = chat(customer);
    fake.reply(call('search_past_conversations', { query: secret }), echo);
    const searched = await later.ask('What was my locker code?');
    expect(JSON.parse(searched.answer)).toEqual([
      { conversations: [], note: 'No earlier conversation of this customer matches.' },
    ]);
  });

  it('asked in a conversation with earlier turns: nothing the question does afterwards is kept, and the chat goes on in a new conversation', async () => {
    const { customer, secret, earlier } = await customerWithHistory();
    // The model forgets, then (wrongly) keeps a note in the same question.
    fake.reply(
      call('forget_everything'),
      call('remember_note', { text: `Locker ${secret} again.` }),
      echo,
    );
    const said = await earlier.ask('Forget everything about me. And remember my locker again.');

    expect(JSON.parse(said.answer)).toEqual([
      {
        error:
          'Not kept: this conversation was erased while you were answering (a request to delete data), so nothing more is written for it.',
      },
    ]);
    expect(await allNotes(customer.id)).toEqual([]);
    expect(await whereIs(secret)).toEqual([]);
    expect(await whereIs(earlier.conversation.id)).toEqual([]);
    await expect(earlier.ask('Hello again?')).rejects.toBeInstanceOf(ConversationDeleted);
  });

  it('forget_notes with all: true deletes the notes only, and its result says the conversations stay', async () => {
    const { customer, secret } = await customerWithHistory();
    fake.reply(call('forget_notes', { all: true }), echo);
    const said = await chat(customer).ask('Forget all my notes.');
    expect(JSON.parse(said.answer)).toEqual([
      {
        forgotten: 1,
        still_kept:
          'Their earlier conversations with you, which search_past_conversations still finds. Say so; forget_everything deletes them too.',
      },
    ]);
    expect(await whereIs(secret)).toEqual(['table message_words', 'table messages']);
  });

  it("the operator's erasure is the same: it deletes the same things and names the tickets kept", async () => {
    const { customer, secret, earlier, ticketId } = await customerWithHistory();
    const erased = await forgetCustomer(logs, customer.id);
    expect(erased).toMatchObject({
      conversations: [{ conversationId: earlier.conversation.id, messages: 4 }],
      notes: 1,
      tickets: [ticketId],
    });
    expect(await whereIs(secret)).toEqual([]);
  });
});
