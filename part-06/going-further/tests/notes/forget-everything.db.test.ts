// "Please forget everything you know about me": notes and conversations go, this one included, nothing comes back, and the answer says what the store keeps.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { whereIs as findText } from '../../../../shared/testing/where-is.ts';
import {
  type ChatView,
  type FakeProvider,
  type ScriptedReply,
} from '../../../../shared/testing/fake-provider.ts';
import { newConversation, type Conversation } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { whatHappened } from '../../nimbus.ts';
import { allNotes } from '../../notes/notes-queries.ts';
import { forgetCustomer } from '../../privacy/delete-conversations.ts';
import { fullSession } from '../full-session.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => ({ fake, db, logs } = await openTestBed('forget-everything')));
afterAll(() => closeTestBed({ fake, db, logs }));

async function newCustomer(): Promise<Customer> {
  const email = `forget-${randomBytes(4).toString('hex')}@example.com`;
  const inserted = await query<ResultSetHeader>(
    "INSERT INTO customers (name, email) VALUES ('Test Customer', ?)",
    [email],
  );
  return { id: inserted.insertId, name: 'Test Customer', email };
}

/** A conversation asked the way every entry asks (Nimbus.ask: its lease, store, notes and tools), traced here. */
function chat(customer: Customer, conversation: Conversation = newConversation(customer.id)) {
  return fullSession(customer, fake.llm('gemini'), conversation, { logDir: logs });
}

/** The messages stored in a conversation, as role and content. */
async function storedIn(conversationId: string) {
  const rows = await query<Array<{ data: string }>>(
    'SELECT CAST(data AS CHAR) AS data FROM messages WHERE conversation_id = ? ORDER BY seq',
    [conversationId],
  );
  return rows.map((row) => JSON.parse(row.data) as { role: string; content: string });
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
  it('deletes the notes and every earlier conversation; the answer names what the store keeps, is shown and kept as the first turn of what remains; the next search finds nothing', async () => {
    const { customer, secret, earlier, ticketId } = await customerWithHistory();
    const asking = chat(customer);
    const question = 'Please forget everything you know about me.';
    fake.reply(call('forget_everything'), echo);
    const asked = await asking.asked(question);

    // The question kept its lease through its own erasure: the model was asked afterwards, and answered.
    expect(asked.lost).toBeUndefined();
    expect(whatHappened(asked)).toBeUndefined();
    const said = asked.result!;
    expect(said.outcome).toBe('answered');
    expect(JSON.parse(said.answer)).toEqual([
      {
        deleted: { notes: 1, earlier_conversations: 1, this_conversation_until_now: true },
        kept: `Their orders and refunds and support tickets #${ticketId}: the store's records, which it must keep.`,
        note: 'This conversation starts afresh: this request and your answer to it are all it keeps. Do not repeat anything said before it: that is erased.',
      },
    ]);
    expect(said.saveError).toBeUndefined();
    expect(said.saved).toBe(true);
    // Nothing of before is anywhere; the request and its answer are all the conversation holds.
    expect(await whereIs(secret)).toEqual([]);
    expect(await whereIs(earlier.conversation.id)).toEqual([]);
    expect(asking.conversation.id).toBe(asked.conversation.id);
    expect((await storedIn(asking.conversation.id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect((await storedIn(asking.conversation.id))[0].content).toBe(question);
    expect(await whereIs(question)).toEqual([
      `file conversations/${asking.conversation.id}.jsonl`,
      'table messages',
    ]);
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

  it('asked in a conversation with earlier turns: its earlier turns go, a note kept after it stays, and the conversation goes on with this turn as its first', async () => {
    const { customer, secret, earlier } = await customerWithHistory();
    const fresh = `bike${randomBytes(3).toString('hex')}`;
    const question = `Forget everything about me. Then remember my bike is ${fresh}.`;
    // The model forgets, then keeps a new note in its next reply: asked after the erasure, it stays.
    let forgot: { deleted?: unknown } = {};
    fake.reply(
      call('forget_everything'),
      (view) => {
        forgot = view.toolResults[0].result as typeof forgot;
        return call('remember_note', { text: `My bike is ${fresh}.` });
      },
      echo,
    );
    const asked = await earlier.asked(question);

    expect(asked.lost).toBeUndefined();
    expect(asked.result!.saveError).toBeUndefined();
    const [remembered] = JSON.parse(asked.result!.answer);
    expect(forgot.deleted).toEqual({
      notes: 1,
      earlier_conversations: 0,
      this_conversation_until_now: true,
    });
    const notes = await allNotes(customer.id);
    expect(remembered).toEqual({
      saved: true,
      note_id: notes[0]?.id,
      expires_on: null,
    });
    // The earlier turn and its note are gone everywhere; the new note is of what remains.
    expect(await whereIs(secret)).toEqual([]);
    expect(notes).toMatchObject([
      { text: `My bike is ${fresh}.`, conversation_id: earlier.conversation.id },
    ]);
    expect((await storedIn(earlier.conversation.id)).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);

    // The chat goes on in the same conversation; the next question's history is this turn alone.
    let seen: ChatView | undefined;
    fake.reply((view) => {
      seen = view;
      return { text: 'Hello!' };
    });
    const next = await earlier.asked('Hello again?');
    expect(next.restarted).toBe(false);
    expect(next.conversation.id).toBe(earlier.conversation.id);
    const sent = seen!.messages.map((m) => m.text ?? '').filter(Boolean);
    expect(sent.some((text) => text.includes(question))).toBe(true);
    expect(JSON.stringify(seen!.messages)).not.toContain(secret);
    expect((await storedIn(earlier.conversation.id))[0].content).toBe(question);
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
