// An erasure from outside while a question that opened a ticket is answered (issue 42, item 2): the chat and ask.ts say it once and truly, naming the ticket the store keeps, and offer the erased conversation nowhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import type { Customer } from '../../../session.ts';
import { forgetCustomer } from '../../privacy/delete-conversations.ts';
import { fullSession } from '../full-session.ts';
import { newCustomer } from '../new-customer.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const CHAT = 'part-06/going-further/chat.ts';
const ASK = 'part-06/going-further/ask.ts';
const SUMMARY = 'Please call me back about my parcel.';
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => ({ fake, db, logs } = await openTestBed('erased-mid-question')));
afterAll(() => closeTestBed({ fake, db, logs }));

const env = () => ({ ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs });

/** A customer with a saved conversation (one turn), for the entry to resume. */
async function customerWithConversation(): Promise<{ customer: Customer; id: string }> {
  const customer = await newCustomer('erased-mid-question');
  const session = fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });
  fake.reply({ text: 'Hello!' });
  await session.ask('Hi');
  return { customer, id: session.conversation.id };
}

/**
 * Runs `entry` (asking in conversation `id`) while the question opens a ticket and then waits for its
 * answer; meanwhile the operator erases the customer (forget.ts --customer --yes does forgetCustomer).
 * Returns what the entry printed and the ticket the question opened.
 */
async function erasedWhileAnswering(
  customer: Customer,
  id: string,
  entry: (env: Record<string, string>) => ReturnType<typeof runInProcess>,
) {
  let release!: () => void;
  fake.reply(
    {
      tool_calls: [
        { name: 'create_support_ticket', arguments: { category: 'other', summary: SUMMARY } },
      ],
    },
    { text: 'Your ticket is open.', gate: new Promise<void>((resolve) => (release = resolve)) },
  );
  const before = fake.chats().length;
  const running = entry(env());
  // The ticket's step is saved and the answer is being written.
  await fake.waitForChat(before + 2);
  const [ticket] = await query<Array<{ id: number }>>(
    'SELECT id FROM tickets WHERE customer_id = ? AND summary = ?',
    [customer.id, SUMMARY],
  );
  // The erasure waits up to 30 s for the question, then takes its lease: here its lease has run out
  // already, so the erasure takes it at once, as it would after the wait.
  await query(
    'UPDATE question_leases SET expires_at = NOW(3) - INTERVAL 1 SECOND WHERE conversation_id = ?',
    [id],
  );
  const erasure = await forgetCustomer(logs, customer.id);
  expect(erasure.conversations.map((c) => c.conversationId)).toEqual([id]);
  release();
  const result = await running;
  // Nothing of the conversation is left; the ticket, the store's record, stays.
  expect(await query('SELECT id FROM conversations WHERE customer_id = ?', [customer.id])).toEqual(
    [],
  );
  expect(await query('SELECT id FROM tickets WHERE customer_id = ?', [customer.id])).toEqual([
    { id: ticket.id },
  ]);
  return { result, ticket: ticket.id };
}

const saidOnce = (ticket: number) =>
  `This conversation was erased while Nimbus was answering (a request to delete data, or a reset), so nothing of it is kept, this answer included. Support ticket #${ticket} stays: the store keeps its records.`;

describe('an erasure from outside while a question that opened a ticket is answered', () => {
  it('the chat says it once, naming the ticket, claims nothing saved, and its Bye offers no erased conversation', async () => {
    const { customer, id } = await customerWithConversation();
    const { result, ticket } = await erasedWhileAnswering(customer, id, (env) =>
      runInProcess(CHAT, ['--quiet', `--resume=${id}`, `--customer=${customer.email}`], {
        env,
        input: 'Please open a ticket for my parcel.\n',
      }),
    );
    expect(result.code, result.stderr).toBe(0);
    const { stdout } = result;
    expect(stdout).not.toContain('What Nimbus had already done is saved');
    expect(stdout).not.toContain('Cancelled');
    expect(stdout.split(saidOnce(ticket))).toHaveLength(2); // said exactly once
    expect(result.stderr).not.toMatch(/Not saved|deleted or taken over/);
    // After it, the erased id is named nowhere: no "Resume later with" it.
    const after = stdout.slice(stdout.indexOf(saidOnce(ticket)));
    expect(after).not.toContain(id);
    expect(stdout).not.toContain('Resume later with');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('Bye!');
  });

  it('ask.ts says the same once, naming the ticket, offers no follow-up, and exits 1', async () => {
    const { customer, id } = await customerWithConversation();
    const { result, ticket } = await erasedWhileAnswering(customer, id, (env) =>
      runInProcess(
        ASK,
        ['-q', `--customer=${customer.email}`, `--conversation=${id}`, 'Open a ticket, please.'],
        { env },
      ),
    );
    expect(result.code).toBe(1);
    expect(result.stderr.split(saidOnce(ticket))).toHaveLength(2);
    expect(result.stderr).not.toMatch(/Not saved|deleted or taken over|Cancelled|follow-up/);
    expect(result.stdout + result.stderr).not.toContain(id);
  });
});
