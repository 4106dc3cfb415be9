// An erasure from outside that is still deleting when the question finds its lease gone (issue 42, item 2): still said as an erasure, naming the ticket, and the chat's Bye offers no conversation being erased.
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionOptions, query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import { forgetCustomer } from '../../privacy/delete-conversations.ts';
import { fullSession } from '../full-session.ts';
import { newCustomer } from '../new-customer.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const CHAT = 'part-06/going-further/chat.ts';
const SUMMARY = 'Please call me back about my parcel.';
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;
let admin: mysql.Connection;

beforeAll(async () => {
  ({ fake, db, logs } = await openTestBed('slow-erasure'));
  admin = await mysql.createConnection({ ...connectionOptions(), database: db.name });
});
afterAll(async () => {
  await admin.end();
  await closeTestBed({ fake, db, logs });
});

describe('an erasure from outside, slower than the question it took the lease from', () => {
  it('the chat says the erasure (naming the ticket), not a takeover by another window, and offers the erased conversation nowhere', async () => {
    const customer = await newCustomer('slow-erasure');
    const session = fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });
    fake.reply({ text: 'Hello!' });
    await session.ask('Hi');
    const id = session.conversation.id;
    await query("INSERT INTO customer_notes (customer_id, text) VALUES (?, 'Prefers email.')", [
      customer.id,
    ]);

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
    const chat = runInProcess(CHAT, ['--quiet', `--resume=${id}`, `--customer=${customer.email}`], {
      env: { ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs },
      input: 'Please open a ticket for my parcel.\n',
    });
    await fake.waitForChat(before + 2); // the ticket's step is saved; the answer is being written
    const [ticket] = await query<Array<{ id: number }>>(
      'SELECT id FROM tickets WHERE customer_id = ?',
      [customer.id],
    );

    // The erasure is slow (a busy database, many conversations): it takes the question's lease, then
    // waits here before it deletes anything.
    await admin.beginTransaction();
    await admin.query('SELECT id FROM customer_notes WHERE customer_id = ? FOR UPDATE', [
      customer.id,
    ]);
    await query(
      'UPDATE question_leases SET expires_at = NOW(3) - INTERVAL 1 SECOND WHERE conversation_id = ?',
      [id],
    );
    const erasing = forgetCustomer(logs, customer.id);
    try {
      await waitUntil('the erasure took the lease and waits to delete her notes', async () => {
        const [rows] = await admin.query<mysql.RowDataPacket[]>(
          "SELECT 1 FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE '%FROM customer_notes WHERE customer_id%FOR UPDATE%' AND ID <> CONNECTION_ID()",
          [db.name],
        );
        return rows.length > 0;
      });
      release(); // the answer comes; its save finds the lease gone
      const result = await chat;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`Support ticket #${ticket.id} stays`);
      expect(result.stdout).toContain('This conversation was erased while Nimbus was answering');
      expect(result.stdout).not.toContain('Another window took this conversation over');
      expect(result.stdout).not.toContain('Resume later with');
    } finally {
      await admin.rollback();
      await erasing;
    }
    expect(await query('SELECT id FROM conversations WHERE id = ?', [id])).toEqual([]);
  });
});
