// "Forget everything" is a turn like any other (issue 42, item 1): the question that erases keeps its lease, its answer is shown and kept as the first turn of what remains, and ask.ts exits 0.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import {
  type ChatView,
  type FakeProvider,
  type ScriptedReply,
} from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { whereIs as findText } from '../../../../shared/testing/where-is.ts';
import { loadMessages } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { whatHappened } from '../../nimbus.ts';
import { FORGET_ALONE } from '../../question/call-limits.ts';
import { allNotes } from '../../notes/notes-queries.ts';
import { fullSession } from '../full-session.ts';
import { newCustomer, ticketOf } from '../new-customer.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const ASK = 'part-06/going-further/ask.ts';
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => ({ fake, db, logs } = await openTestBed('forget-answered')));
afterAll(() => closeTestBed({ fake, db, logs }));

const call = (name: string, args: Record<string, unknown> = {}): ScriptedReply => ({
  tool_calls: [{ name, arguments: args }],
});
/** A model that answers with the results it was given, so a test reads them in the answer. */
const echo = (view: ChatView) => ({ text: JSON.stringify(view.toolResults.map((r) => r.result)) });
const whereIs = (text: string) => findText(db.name, logs, text);
/** A session of hers whose traces go to this file's own folder (whereIs looks there). */
const session = (customer: Customer) =>
  fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });

/** A customer who told Nimbus a secret in an earlier conversation, kept a note of it, and has a ticket. */
async function customerWithHistory() {
  const customer = await newCustomer('forget-answered');
  const secret = `locker${randomBytes(3).toString('hex')}`;
  fake.reply(call('remember_note', { text: `My locker code is ${secret}.` }), {
    text: `Noted: ${secret}.`,
  });
  await session(customer).ask(`Please remember my locker code ${secret}.`);
  const ticket = await ticketOf(customer);
  expect(await whereIs(secret)).toEqual(
    expect.arrayContaining(['table customer_notes', 'table messages']),
  );
  return { customer, secret, ticket };
}

describe('a question whose model calls forget_everything, then answers', () => {
  it('gets its answer, kept as the first turn of what remains; called beside another call it is refused and nothing is erased; the tickets are named', async () => {
    const { customer, secret, ticket } = await customerWithHistory();
    const order = await query<ResultSetHeader>(
      "INSERT INTO orders (customer_id, status, created_at, paid_at) VALUES (?, 'shipped', NOW(), NOW())",
      [customer.id],
    );
    // This conversation has an earlier turn that holds the secret too.
    const asking = session(customer);
    fake.reply({ text: `Your locker code is ${secret}.` });
    await asking.ask(`What is my locker code? I think it was ${secret}.`);
    const id = asking.conversation.id;

    // First the model calls it beside a look-up: what the look-up returned would outlive the erasure,
    // so forget_everything is refused and the look-up runs; then the model calls it alone.
    let besides: unknown[] = [];
    fake.reply(
      {
        tool_calls: [
          { name: 'forget_everything', arguments: {} },
          { name: 'get_order_status', arguments: { order_id: order.insertId } },
        ],
      },
      (view) => {
        besides = view.toolResults.map((r) => r.result);
        return call('forget_everything');
      },
      echo,
    );
    const asked = await asking.asked('Please forget everything you know about me.');

    expect(besides).toEqual([
      { error: FORGET_ALONE },
      expect.objectContaining({ order_id: order.insertId, status: 'shipped' }),
    ]);

    // Answered, in the same conversation, with nothing to say about an erasure from outside.
    expect(asked.lost).toBeUndefined();
    expect(whatHappened(asked)).toBeUndefined();
    expect(asked.conversation.id).toBe(id);
    expect(asked.result).toMatchObject({ outcome: 'answered', saved: true });
    expect(asked.result!.saveError).toBeUndefined();
    expect(JSON.parse(asked.result!.answer)).toEqual([
      {
        deleted: { notes: 1, earlier_conversations: 1, this_conversation_until_now: true },
        kept: `Their orders and refunds and support tickets #${ticket}: the store's records, which it must keep.`,
        note: 'This conversation starts afresh: this request and your answer to it are all it keeps. Do not repeat anything said before it: that is erased.',
      },
    ]);

    // What remains: this question and its answer, the first turn of the conversation; nothing before.
    const stored = await loadMessages(id);
    // The look-up's step went with the rest: the erasure's own step follows the question.
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored[0].content).toBe('Please forget everything you know about me.');
    expect(stored.at(-1)!.content).toBe(asked.result!.answer);
    expect(
      await query('SELECT id FROM conversations WHERE customer_id = ?', [customer.id]),
    ).toEqual([{ id }]);
    expect(await allNotes(customer.id)).toEqual([]);
    expect(await whereIs(secret)).toEqual([]);
    expect(await query('SELECT id FROM tickets WHERE customer_id = ?', [customer.id])).toEqual([
      { id: ticket },
    ]);

    // The next question follows it up: its request holds that turn, and nothing erased.
    const before = fake.chats().length;
    fake.reply({ text: 'Only your orders, refunds and tickets.' });
    await asking.ask('What do you still keep?');
    const sent = fake.chats()[before].view!;
    expect(sent.messages.filter((m) => m.role === 'user').map((m) => m.text)).toEqual([
      'Please forget everything you know about me.',
      'What do you still keep?',
    ]);
    expect(JSON.stringify(fake.chats()[before].body)).not.toContain(secret);
  });

  it('asked with ask.ts: the answer is printed, the conversation offered for a follow-up, exit 0', async () => {
    const { customer, secret, ticket } = await customerWithHistory();
    fake.reply(call('forget_everything'), (view) => ({
      text: `Done. ${(view.toolResults[0].result as { kept: string }).kept}`,
    }));
    const result = await runInProcess(
      ASK,
      ['-q', `--customer=${customer.email}`, 'please forget everything you know about me'],
      { env: { ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs } },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `Done. Their orders and refunds and support tickets #${ticket}: the store's records, which it must keep.\n`,
    );
    expect(result.stderr).not.toMatch(/deleted or taken over|erased|Cancelled|Not saved/);
    const id = /Conversation ([0-9a-f]{32}): ask a follow-up/.exec(result.stderr)?.[1];
    expect(id, result.stderr).toBeDefined();
    expect((await loadMessages(id!)).map((m) => m.content)).toEqual([
      'please forget everything you know about me',
      '',
      expect.stringContaining(`#${ticket}`),
      result.stdout.trim(),
    ]);
    expect(await whereIs(secret)).toEqual([]);
  });
});
