// Waiting to start a question (issue 42, items 6 and 8): Ctrl-C while ask.ts waits for another question is one calm line (exit 130); an erasure's mark expires within ERASURE_MARK_SECONDS, and a question it holds is told an erasure runs.
import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import type { Customer } from '../../../session.ts';
import { forgetCustomer } from '../../privacy/delete-conversations.ts';
import { ERASURE_MARK_SECONDS, withErasureMarked } from '../../question/erasure-mark.ts';
import {
  ErasureRunning,
  heldByErasure,
  takeLease,
  takeLeases,
  WAITING_FOR_ERASURE,
  WAITING_FOR_OTHER_QUESTION,
} from '../../question/lease.ts';
import { fullSession } from '../full-session.ts';
import { newCustomer } from '../new-customer.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const ASK = 'part-06/going-further/ask.ts';
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => ({ fake, db, logs } = await openTestBed('lease-waits')));
afterAll(() => closeTestBed({ fake, db, logs }));

const env = () => ({ ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs });

/** A customer of the test's own with one saved conversation. */
async function customerWithConversation(): Promise<{ customer: Customer; id: string }> {
  const customer = await newCustomer('lease-waits');
  const session = fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });
  fake.reply({ text: 'Hello!' });
  await session.ask('Hi');
  return { customer, id: session.conversation.id };
}

/** How many times her questions tried to take a lease (each try writes customer_erasures). */
async function tries(customer: Customer): Promise<number> {
  const [row] = await query<Array<{ questions: number }>>(
    'SELECT questions FROM customer_erasures WHERE customer_id = ?',
    [customer.id],
  );
  return Number(row?.questions ?? 0);
}

/** Marks her as an erasure does, for `seconds` from now, with nothing renewing it: the erasure's process died. */
const markLeftBehind = (customer: Customer, seconds: number) =>
  query(
    `INSERT INTO customer_erasures (customer_id, erasing_until) VALUES (?, NOW(3) + INTERVAL ? SECOND)
     ON DUPLICATE KEY UPDATE erasing_until = VALUES(erasing_until)`,
    [customer.id, seconds],
  );

describe('Ctrl-C while ask.ts waits for another question in its conversation', () => {
  it('is one calm line, exit 130: no "Unexpected error", nothing asked or saved', async () => {
    const { customer, id } = await customerWithConversation();
    const other = await takeLease({ id, customerId: customer.id }); // another window's question
    try {
      const before = await tries(customer);
      const chats = fake.chats().length;
      const signals = new EventEmitter();
      const asking = runInProcess(
        ASK,
        ['-q', `--customer=${customer.email}`, `--conversation=${id}`, 'Are you there?'],
        { env: env(), signals },
      );
      // Its first try found the lease taken: it is waiting now.
      await waitUntil(
        'ask.ts is waiting for the lease',
        async () => (await tries(customer)) > before,
      );
      signals.emit('SIGINT', 'SIGINT');
      const result = await asking;
      expect(result.code).toBe(130);
      expect(result.stderr.trim().split('\n')).toEqual([
        WAITING_FOR_OTHER_QUESTION,
        '(Cancelled: nothing from this question was saved.)',
      ]);
      expect(result.stdout).toBe('');
      expect(fake.chats().length).toBe(chats);
      const stored = await query<Array<{ n: number }>>(
        'SELECT COUNT(*) AS n FROM messages WHERE conversation_id = ?',
        [id],
      );
      expect(Number(stored[0].n)).toBe(2); // "Hi" and its answer only
    } finally {
      await other.release();
    }
  });
});

describe('an erasure waiting for questions in several conversations', () => {
  it('waits once for them all, not once for each, and then holds them all', async () => {
    const first = await customerWithConversation();
    const customer = first.customer;
    const second = fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });
    fake.reply({ text: 'Hello again!' });
    await second.ask('Hi again');
    const targets = [first.id, second.conversation.id].map((id) => ({
      id,
      customerId: customer.id,
    }));
    // A question is in flight in each, and neither ends: the erasure takes both over after its wait.
    const questions = await Promise.all(targets.map((target) => takeLease(target)));
    const waits: string[] = [];
    const release = await takeLeases(targets, {
      waitSeconds: 1,
      takeOver: true,
      erasure: true,
      onWait: (what) => waits.push(what),
    });
    try {
      // The second conversation was found busy after the one wait had run out: taken at once.
      expect(waits).toEqual(['question']);
      for (const target of targets) expect(await heldByErasure(target.id)).toBe(true);
    } finally {
      await release();
      await Promise.all(questions.map((lease) => lease.release()));
    }
    for (const target of targets) expect(await heldByErasure(target.id)).toBe(false);
  });
});

describe("an erasure's mark", () => {
  it(`set by a running erasure expires within ERASURE_MARK_SECONDS (${ERASURE_MARK_SECONDS} s) unless renewed, and is cleared when it ends`, async () => {
    const { customer, id } = await customerWithConversation();
    // A question of hers is in flight: the erasure marks her, then waits for it.
    const other = await takeLease({ id, customerId: customer.id });
    const erasing = forgetCustomer(logs, customer.id);
    let released = false;
    try {
      const left = async () => {
        const [row] = await query<Array<{ ms: number | null }>>(
          'SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), erasing_until) / 1000 AS ms FROM customer_erasures WHERE customer_id = ?',
          [customer.id],
        );
        return row?.ms === null || row?.ms === undefined ? undefined : Number(row.ms);
      };
      await waitUntil('the erasure has marked her', async () => (await left()) !== undefined);
      // What a crash now would leave: a mark no further out than ERASURE_MARK_SECONDS.
      expect(await left()).toBeLessThanOrEqual(ERASURE_MARK_SECONDS * 1000);
      await other.release();
      released = true;
      await erasing;
    } finally {
      if (!released) await other.release();
      await erasing.catch(() => {});
    }
    const [row] = await query<Array<{ erasing_until: Date | null }>>(
      'SELECT erasing_until FROM customer_erasures WHERE customer_id = ?',
      [customer.id],
    );
    expect(row.erasing_until).toBeNull();
  });

  it('of two erasures of one customer at once holds her questions until the last one ends', async () => {
    const { customer, id } = await customerWithConversation();
    const mark = async () => {
      const [row] = await query<Array<{ until: Date | null; erasures: number }>>(
        'SELECT erasing_until AS until, erasures FROM customer_erasures WHERE customer_id = ?',
        [customer.id],
      );
      return { marked: row.until !== null, erasures: Number(row.erasures) };
    };
    const starting = () => takeLease({ id, customerId: customer.id }, { waitSeconds: 0 });
    // forget.ts runs a long erasure of her; meanwhile her own forget_everything runs a short one.
    let endLong: (() => void) | undefined;
    const long = withErasureMarked(customer.id, () => new Promise<void>((r) => (endLong = r)));
    try {
      await waitUntil('the long erasure runs', () => endLong !== undefined);
      await withErasureMarked(customer.id, async () => {
        expect(await mark()).toEqual({ marked: true, erasures: 2 });
      });
      // The short one ended: she is still being erased, and a question of hers does not start.
      expect(await mark()).toEqual({ marked: true, erasures: 1 });
      await expect(starting()).rejects.toThrow(ErasureRunning);
    } finally {
      endLong?.();
      await long;
    }
    expect(await mark()).toEqual({ marked: false, erasures: 0 });
    await (await starting()).release();
  });

  it('left by a crashed erasure holds her next question only until it runs out, and the wait notice says an erasure is running', async () => {
    const { customer, id } = await customerWithConversation();
    await markLeftBehind(customer, 1);
    fake.reply({ text: 'Yes, I am here.' });
    const result = await runInProcess(
      ASK,
      ['-q', `--customer=${customer.email}`, `--conversation=${id}`, 'Are you there?'],
      { env: env() },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('Yes, I am here.\n');
    expect(result.stderr).toContain(WAITING_FOR_ERASURE);
    expect(result.stderr).not.toContain(WAITING_FOR_OTHER_QUESTION);
    expect(result.stderr).not.toContain('busy answering a question elsewhere');
  });

  it('still there when the wait runs out: ErasureRunning says an erasure is running, not that the conversation is busy', async () => {
    const { customer, id } = await customerWithConversation();
    await markLeftBehind(customer, 60);
    const waits: string[] = [];
    try {
      const taking = takeLease(
        { id, customerId: customer.id },
        { waitSeconds: 1, onWait: (what) => waits.push(what) },
      );
      await expect(taking).rejects.toThrow(ErasureRunning);
      await expect(taking).rejects.toThrow(
        "An erasure of this customer's data has been running for 1 s; ask again when it has finished.",
      );
      expect(waits).toEqual(['erasure']);
    } finally {
      await query('UPDATE customer_erasures SET erasing_until = NULL WHERE customer_id = ?', [
        customer.id,
      ]);
    }
  });
});
