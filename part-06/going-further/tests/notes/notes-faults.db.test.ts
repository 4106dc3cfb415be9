// Customer notes when things go wrong: a note that comes back, writers on two database nodes, a question whose conversation was erased, damaged or linked trace files.
import { randomBytes } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionOptions, query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { NO_PROVIDER } from '../../../../shared/testing/fake-provider.ts';
import { startScript, waitForOutput, collect } from '../../../../shared/testing/run-script.ts';
import { waitUntil } from '../../../../shared/testing/wait-until.ts';
import { newConversation, type Conversation } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { runTool, type ToolContext } from '../../../tools.ts';
import { conversationTraceFile } from '../../../trace.ts';
import { takeLease } from '../../question/lease.ts';
import { withFence } from '../../store/fence.ts';
import {
  allNotes,
  liveNotes,
  MAX_NOTES_PER_CUSTOMER,
  saveNote,
} from '../../notes/notes-queries.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { forgetNotes } from '../../privacy/delete-notes.ts';
import { customerMemoryTools } from '../../notes/notes-tools.ts';
import { createProductDatabase } from '../product-database.ts';

let db: ScratchDatabase;
let logs: string;
let tools: ReturnType<typeof customerMemoryTools>;

beforeAll(async () => {
  // The product's database: a question's writes check its lease there, as in the chat.
  db = await createProductDatabase();
  await ensureFullDatabase(() => {});
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-notes-faults-'));
  mkdirSync(path.join(logs, 'conversations'));
  tools = customerMemoryTools();
});
afterAll(async () => {
  rmSync(logs, { recursive: true, force: true });
  await db.drop();
});

async function newCustomer(): Promise<Customer> {
  const email = `faults-${randomBytes(4).toString('hex')}@example.com`;
  const inserted = await query<ResultSetHeader>(
    "INSERT INTO customers (name, email) VALUES ('Test Customer', ?)",
    [email],
  );
  return { id: inserted.insertId, name: 'Test Customer', email };
}

/** Calls a notes tool as one question of `conversation` would. */
function call(
  customer: Customer,
  name: string,
  args: Record<string, unknown>,
  conversation?: Conversation,
) {
  conversation ??= newConversation(customer.id);
  const context: ToolContext = { customer, conversation, llm: NO_PROVIDER, ticketsOpened: 0 };
  return runTool({ id: 'c', name, arguments: args }, context, tools);
}

/** The customer keeps `n` notes that apply, numbered. */
async function keepNotes(customer: Customer, n: number): Promise<void> {
  for (let i = 1; i <= n; i++)
    expect(
      await saveNote(customer.id, 'a'.repeat(32), `Preference number ${i}.`, null),
    ).toMatchObject({
      outcome: 'saved',
    });
}

describe('the notes cap', () => {
  it('counts a note that comes back after it expired, and says it was revived', async () => {
    const customer = await newCustomer();
    const old = await call(customer, 'remember_note', { text: 'Leave parcels at the back door.' });
    await query(
      'UPDATE customer_notes SET expires_on = CURRENT_DATE - INTERVAL 1 DAY WHERE id = ?',
      [old.note_id],
    );
    await keepNotes(customer, MAX_NOTES_PER_CUSTOMER);

    // At the cap, the same words again would make one more note that applies: refused like a new one.
    expect(
      await call(customer, 'remember_note', { text: 'leave parcels at the BACK door.' }),
    ).toEqual({
      error: `The customer already keeps ${MAX_NOTES_PER_CUSTOMER} notes. Ask which one to forget first (forget_notes).`,
    });
    expect(await liveNotes(customer.id)).toHaveLength(MAX_NOTES_PER_CUSTOMER);

    // With room again, it comes back, and the result says so: it was not "already noted".
    const [newest] = await liveNotes(customer.id);
    await forgetNotes(logs, customer.id, [newest.id]);
    const conversation = newConversation(customer.id);
    expect(
      await call(
        customer,
        'remember_note',
        { text: 'Leave parcels at the back door.' },
        conversation,
      ),
    ).toEqual({ saved: true, revived: true, note_id: old.note_id, expires_on: null });
    const revived = (await liveNotes(customer.id)).find((note) => note.id === old.note_id);
    expect(revived).toMatchObject({ conversation_id: conversation.id, expires_on: null });
    expect(await liveNotes(customer.id)).toHaveLength(MAX_NOTES_PER_CUSTOMER);
  });

  it('holds with two writers on two database nodes, where a row lock on one is not seen on the other', async () => {
    const customer = await newCustomer();
    await keepNotes(customer, MAX_NOTES_PER_CUSTOMER - 1);
    // "Node B": a database whose customers table is its own copy, so a row lock taken there is not
    // seen here, as on a Galera cluster; every other table is this one's, seen through a view.
    const nodeB = `${db.name}_b`;
    const admin = await mysql.createConnection(connectionOptions());
    const holdA = await mysql.createConnection({ ...connectionOptions(), database: db.name });
    let elsewhere: ReturnType<typeof startScript> | undefined;
    try {
      await admin.query(`CREATE DATABASE \`${nodeB}\``);
      await admin.query(`CREATE TABLE \`${nodeB}\`.customers LIKE \`${db.name}\`.customers`);
      await admin.query(
        `INSERT INTO \`${nodeB}\`.customers SELECT * FROM \`${db.name}\`.customers`,
      );
      const [tables] = await admin.query<mysql.RowDataPacket[]>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_name <> 'customers'",
        [db.name],
      );
      for (const { name } of tables)
        await admin.query(
          `CREATE VIEW \`${nodeB}\`.\`${name}\` AS SELECT * FROM \`${db.name}\`.\`${name}\``,
        );
      elsewhere = startScript(
        'part-06/going-further/tests/notes/save-note-elsewhere.ts',
        [String(customer.id), 'b'.repeat(32), 'Saved on node B.'],
        { env: { DB_NAME: nodeB } },
      );
      const outcomeB = collect(elsewhere);
      await waitForOutput(elsewhere, 'ready');

      // A save on this node, held up after its checks, at its insert: the test's own transaction holds
      // the row it inserts (without a foreign key check, which would lock the customer's row too).
      await holdA.query('SET SESSION foreign_key_checks = 0');
      await holdA.query('BEGIN');
      await holdA.query(
        "INSERT INTO customer_notes (customer_id, text) VALUES (?, 'Saved on node A.')",
        [customer.id],
      );
      const outcomeA = saveNote(customer.id, 'a'.repeat(32), 'Saved on node A.', null);
      await waitUntil('node A inserts', () => running(db.name, 'INSERT INTO customer_notes'));
      // Node B saves meanwhile, up to a write that waits for node A's; then node A's save commits.
      elsewhere.stdin.end('go\n');
      await waitUntil('node B writes', () => running(nodeB, 'INSERT'));
      await holdA.query('ROLLBACK');

      // Node B's write waited for node A's (on a cluster it would fail at COMMIT and run again): either
      // way it counted node A's note, and kept none.
      expect(await outcomeA).toMatchObject({ outcome: 'saved' });
      const run = await outcomeB;
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout.split('\n')[1])).toMatchObject({ outcome: 'full' });
      expect(await liveNotes(customer.id)).toHaveLength(MAX_NOTES_PER_CUSTOMER);
    } finally {
      elsewhere?.stdin.end(); // if it never got its line, it ends without saving
      await holdA.end();
      await admin.query(`DROP DATABASE IF EXISTS \`${nodeB}\``);
      await admin.end();
    }
  });
});

/**
 * Whether a connection to this database is running a statement that starts so. Here such a statement
 * cannot finish while another transaction holds its row: seen running is seen waiting.
 */
async function running(database: string, statement: string): Promise<boolean> {
  const rows = await query<unknown[]>(
    "SELECT 1 FROM information_schema.processlist WHERE db = ? AND command = 'Query' AND info LIKE ?",
    [database, `${statement}%`],
  );
  return rows.length > 0;
}

describe('a note asked for in a conversation erased meanwhile', () => {
  it('is not kept: the question lost its lease to the erasure', async () => {
    const customer = await newCustomer();
    const conversation = newConversation(customer.id);
    // The question's lease, as Nimbus.ask takes it; its tools run behind its fence.
    const lease = await takeLease(conversation);
    try {
      // An erasure in another process took the lease over (takeLeases with takeOver, after its wait).
      await query('UPDATE question_leases SET holder = ? WHERE conversation_id = ?', [
        'e'.repeat(32),
        conversation.id,
      ]);
      const asked = withFence(lease.fence, () =>
        call(customer, 'remember_note', { text: 'Call me Sam.' }, conversation),
      );
      expect(await asked).toEqual({
        error:
          'Not kept: this conversation was erased while you were answering (a request to delete data), so nothing more is written for it.',
      });
      expect(await allNotes(customer.id)).toEqual([]);
      // The question is told: it stops, as on Ctrl-C.
      expect(lease.lost.aborted).toBe(true);
    } finally {
      await lease.release();
    }
  });
});

describe('forgetting a note in trace files', () => {
  it("finds the note's line glued onto a line a full disk cut short, and keeps the other questions", async () => {
    const customer = await newCustomer();
    const conversation = newConversation(customer.id);
    const saved = await saveNote(customer.id, conversation.id, 'My gate code is 4711.', null);
    const id = saved.outcome === 'saved' ? saved.id : 0;
    const event = (trace: string, type: string, data: Record<string, unknown>) =>
      JSON.stringify({
        ts: '2026-12-01T10:00:00.000Z',
        trace,
        conversation_id: conversation.id,
        type,
        ...data,
      });
    const lines = [
      event('aaaa', 'start', { question: 'Where is order 1042?' }),
      event('aaaa', 'end', { answer: 'It shipped.' }),
      // The disk filled up in the middle of this line; the next one was appended right after it.
      event('bbbb', 'start', { question: 'Please remember: my gate code is 4711.' }).slice(0, 70) +
        event('bbbb', 'tool_result', {
          name: 'remember_note',
          result: { saved: true, note_id: id },
        }),
      event('bbbb', 'end', { answer: 'Noted: gate code 4711.' }),
      event('cccc', 'start', { question: 'Thanks!' }),
      '',
    ];
    const file = conversationTraceFile(logs, conversation.id);
    writeFileSync(file, lines.join('\n'));

    expect(await forgetNotes(logs, customer.id, [id])).toEqual([
      { id, conversation_id: conversation.id },
    ]);
    const left = readFileSync(file, 'utf8');
    expect(left).not.toContain('4711');
    expect(left.split('\n').map((line) => line && JSON.parse(line).trace)).toEqual([
      'aaaa',
      'aaaa',
      'cccc',
      '',
    ]);
  });

  it('neither reads nor replaces what a link in a trace file’s place points to', async () => {
    const customer = await newCustomer();
    const conversation = newConversation(customer.id);
    const saved = await saveNote(customer.id, conversation.id, 'Deliver on Mondays.', null);
    const id = saved.outcome === 'saved' ? saved.id : 0;
    const elsewhere = path.join(logs, 'someone-elses.jsonl');
    const theirs = `${JSON.stringify({ trace: 'dddd', type: 'tool_result', name: 'remember_note', result: { note_id: id } })}\nother lines\n`;
    writeFileSync(elsewhere, theirs);
    const file = conversationTraceFile(logs, conversation.id);
    symlinkSync(elsewhere, file);

    await forgetNotes(logs, customer.id, [id]);
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(readFileSync(elsewhere, 'utf8')).toBe(theirs);
    expect(await allNotes(customer.id)).toEqual([]);
  });
});
