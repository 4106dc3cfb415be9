// The operator's views stay bounded as a conversation grows (issue 42, item 11): show-conversation --context reads only the newest rows, as the chat does; export-customer streams its batches into JSON equal to the whole-object export.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { PassThrough, Writable } from 'node:stream';
import path from 'node:path';
import type { ResultSetHeader } from 'mysql2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWith, scriptIo } from '../../../../shared/cli.ts';
import { dbSettings, ROOT_DIR } from '../../../../shared/config.ts';
import { query } from '../../../../shared/db.ts';
import { displayPath } from '../../../../shared/hints.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import type { Customer } from '../../../session.ts';
import { describeConversation } from '../../../stored-conversations.ts';
import { conversationTraceFile } from '../../../trace.ts';
import { allNotes } from '../../notes/notes-queries.ts';
import { exportConversation } from '../../privacy/customer-data.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';
import { loadRows } from '../../store/message-rows.ts';
import { readHistory } from '../../store/read-history.ts';
import * as exportCustomer from '../../export-customer.ts';
import { newCustomer, ticketOf } from '../new-customer.ts';
import { createProductDatabase } from '../product-database.ts';

const SHOW = 'part-06/going-further/show-conversation.ts';
const EXPORT = 'part-06/going-further/export-customer.ts';
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => {
  db = await createProductDatabase();
  await ensureFullDatabase(() => {});
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-operator-views-'));
});
afterAll(async () => {
  rmSync(logs, { recursive: true, force: true });
  await db.drop();
});

const env = (more: Record<string, string> = {}) => ({ DB_NAME: db.name, LOG_DIR: logs, ...more });

/** Turn `k` of a long conversation: a question, two steps of calls with their results, an answer (7 messages). */
function turn(k: number, filler = ''): object[] {
  const call = (c: string) => ({
    id: `call_${k}_${c}`,
    name: 'get_order_status',
    arguments: { order_id: 1042 },
  });
  const result = (c: string) => ({
    role: 'tool',
    tool_call_id: `call_${k}_${c}`,
    name: 'get_order_status',
    content: JSON.stringify({ order_id: 1042, status: 'shipped', note: `${c}${filler}` }),
  });
  return [
    { role: 'user', content: `Question ${k}: where is order 1042?${filler}` },
    { role: 'assistant', content: '', tool_calls: [call('a'), call('b')] },
    result('a'),
    result('b'),
    { role: 'assistant', content: '', tool_calls: [call('c')] },
    result('c'),
    { role: 'assistant', content: `Answer ${k}: it has shipped.${filler}` },
  ];
}

/** A conversation of hers holding these messages, stored as the store stores them (seq from 1). */
async function conversationOf(customer: Customer, messages: object[]): Promise<string> {
  const id = `${Date.now().toString(16)}${Math.random().toString(16).slice(2)}`
    .padEnd(32, '0')
    .slice(0, 32);
  await query('INSERT INTO conversations (id, customer_id) VALUES (?, ?)', [id, customer.id]);
  for (let start = 0; start < messages.length; start += 1000) {
    const rows = messages
      .slice(start, start + 1000)
      .map((message, i) => [
        id,
        start + i + 1,
        (message as { role: string }).role,
        JSON.stringify(message),
      ]);
    await query('INSERT INTO messages (conversation_id, seq, role, data) VALUES ?', [rows]);
  }
  return id;
}

/** A TCP relay in front of the database that counts the bytes the server sends back. */
async function countingRelay() {
  const { host, port } = dbSettings(process.env);
  let fromServer = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect({ host, port });
    upstream.on('data', (chunk) => (fromServer += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    bytes: () => fromServer,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('show-conversation --context on a long conversation', () => {
  it('reads only the newest rows the budget needs, not the conversation', async () => {
    const customer = await newCustomer('long-context');
    // 600 turns (4,200 messages, about 1.6 MB stored).
    const messages = Array.from({ length: 600 }, (_, k) =>
      turn(k + 1, ' and more'.repeat(40)),
    ).flat();
    const id = await conversationOf(customer, messages);
    const [{ stored }] = await query<Array<{ stored: number }>>(
      'SELECT SUM(LENGTH(data)) AS stored FROM messages WHERE conversation_id = ?',
      [id],
    );
    expect(Number(stored)).toBeGreaterThan(1_500_000);
    const relay = await countingRelay();
    try {
      const shown = await runInProcess(SHOW, [id, '--context'], {
        env: env({ DB_HOST: '127.0.0.1', DB_PORT: String(relay.port) }),
      });
      expect(shown.code, shown.stderr).toBe(0);
      // Everything the server sent the view: a small part of what the conversation holds.
      expect(relay.bytes()).toBeLessThan(Number(stored) / 10);
      expect(shown.stdout).toContain('user: Question 600: where is order 1042?');
      expect(shown.stdout).toContain(
        'Older turns were not read: past the budget, every one of them is dropped (the turns above are numbered from the oldest one read).',
      );
      expect(shown.stdout).not.toContain('Question 1: where'); // the first turn, never read
    } finally {
      await relay.close();
    }
  });
});

/**
 * export-customer.ts for this customer, run in-process as runInProcess runs it, with a stdout that
 * keeps each write apart: what it wrote, write by write.
 */
async function exportWrites(customer: Customer) {
  const writes: string[] = [];
  let stderr = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      writes.push(chunk.toString());
      done();
    },
  });
  const io = scriptIo({
    args: [`--customer=${customer.email}`],
    env: { ...process.env, NO_COLOR: '1', ...env() },
    cwd: ROOT_DIR,
    entry: path.resolve(ROOT_DIR, EXPORT),
    stdin: new PassThrough(),
    stdout,
    stderr: new Writable({
      write(chunk, _encoding, done) {
        stderr += chunk.toString();
        done();
      },
    }),
  });
  const code = await runWith(exportCustomer.main, exportCustomer.usage, io, {
    openDatabase: exportCustomer.openDatabase,
  });
  return { code, writes, stderr };
}

/** What export-customer wrote as one object before it streamed: the same fields, every row read at once. */
async function wholeExport(customer: Customer) {
  const [record] = await query<Array<Record<string, unknown>>>(
    'SELECT id, name, email, created_at FROM customers WHERE id = ?',
    [customer.id],
  );
  const orders = await query<Array<Record<string, unknown> & { id: number }>>(
    `SELECT id, status, created_at, paid_at, shipped_at, delivered_at, shipping_cost
       FROM orders WHERE customer_id = ? ORDER BY created_at, id`,
    [customer.id],
  );
  for (const order of orders)
    order.items = await query(
      `SELECT p.name AS product, i.quantity, i.unit_price
         FROM order_items i JOIN products p ON p.id = i.product_id WHERE i.order_id = ? ORDER BY p.name`,
      [order.id],
    );
  const tickets = await query(
    `SELECT id, category, summary, order_id, status, created_at
       FROM tickets WHERE customer_id = ? ORDER BY id`,
    [customer.id],
  );
  const ids = await query<Array<{ id: string }>>(
    'SELECT id FROM conversations WHERE customer_id = ? ORDER BY created_at, id',
    [customer.id],
  );
  const conversations = [];
  for (const { id } of ids) {
    const rows = await loadRows(id);
    const traceFile = conversationTraceFile(logs, id);
    conversations.push({
      ...exportConversation((await describeConversation(id))!, rows, readHistory(rows)),
      trace_file: existsSync(traceFile) ? displayPath(traceFile) : null,
    });
  }
  const notes = await allNotes(customer.id);
  return JSON.parse(JSON.stringify({ customer: record, orders, tickets, notes, conversations }));
}

describe('export-customer', () => {
  it('writes valid JSON equal to the whole-object export, over several batches, a turn across a batch boundary kept whole', async () => {
    const customer = await newCustomer('export');
    const order = await query<ResultSetHeader>(
      "INSERT INTO orders (customer_id, status, created_at, paid_at) VALUES (?, 'paid', NOW(), NOW())",
      [customer.id],
    );
    await query(
      'INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES (?, 1, 1, 129.00)',
      [order.insertId],
    );
    await ticketOf(customer, 'Where is my parcel?');
    await query("INSERT INTO customer_notes (customer_id, text) VALUES (?, 'Prefers email.')", [
      customer.id,
    ]);
    // 400 turns of 7 messages (2,800): turn 72 holds messages 499 to 505, across the first batch's end.
    // A stray result (a damaged row) is kept in place and marked, as the whole export marks it.
    const long = Array.from({ length: 400 }, (_, k) => turn(k + 1)).flat();
    long.splice(20, 0, {
      role: 'tool',
      tool_call_id: 'call_none',
      name: 'get_order_status',
      content: '{}',
    });
    await conversationOf(customer, long);
    await conversationOf(customer, turn(1));
    await conversationOf(customer, []); // a conversation with no messages

    const exported = await exportWrites(customer);
    expect(exported.code, exported.stderr).toBe(0);
    const text = exported.writes.join('');
    const written = JSON.parse(text); // valid JSON, or this throws
    // Written a batch at a time as it is read: no write holds more than a part of the whole.
    expect(exported.writes.length).toBeGreaterThan(6);
    expect(Math.max(...exported.writes.map((w) => w.length))).toBeLessThan(text.length / 3);
    const whole = await wholeExport(customer);
    expect(whole.conversations.map((c: { messages: unknown[] }) => c.messages.length)).toEqual(
      expect.arrayContaining([2801, 7, 0]),
    );
    const damaged = whole.conversations.flatMap((c: { messages: Array<{ damaged?: string }> }) =>
      c.messages.filter((m) => m.damaged),
    );
    expect(damaged).toEqual([
      expect.objectContaining({ seq: 21, damaged: 'tool result without its call' }),
    ]);
    expect(written).toEqual(whole);
  });

  it('stops, exit 0, when its reader leaves early (`| head`), instead of waiting for ever for it to read on', async () => {
    const customer = await newCustomer('export-reader-gone');
    await conversationOf(customer, Array.from({ length: 120 }, (_, k) => turn(k + 1)).flat());
    // A pipe whose reader took one chunk and left: it takes no more, and then it is closed.
    const stdout = new Writable({ highWaterMark: 1, write: (_chunk, _encoding, done) => done() });
    let writes = 0;
    const write = stdout.write.bind(stdout);
    stdout.write = ((chunk: string) => {
      if (++writes === 2) setImmediate(() => stdout.destroy());
      return writes === 1 ? write(chunk) : false; // backpressure from the second write on
    }) as typeof stdout.write;
    const io = scriptIo({
      args: [`--customer=${customer.email}`],
      env: { ...process.env, NO_COLOR: '1', ...env() },
      cwd: ROOT_DIR,
      entry: path.resolve(ROOT_DIR, EXPORT),
      stdin: new PassThrough(),
      stdout,
      stderr: new PassThrough(),
    });
    const code = await runWith(exportCustomer.main, exportCustomer.usage, io, {
      openDatabase: exportCustomer.openDatabase,
    });
    expect(code).toBe(0);
    expect(writes).toBe(2); // nothing more was read or written once the reader had gone
  });

  it('keeps whole a turn longer than a batch (a question that made 1,500 calls), as the whole-object export does', async () => {
    const customer = await newCustomer('export-long-turn');
    const calls = Array.from({ length: 1500 }, (_, i) => ({
      id: `call_${i}`,
      name: 'get_order_status',
      arguments: { order_id: 1042 },
    }));
    await conversationOf(customer, [
      ...turn(1),
      { role: 'user', content: 'Where are all my orders?' },
      { role: 'assistant', content: '', tool_calls: calls },
      ...calls.map((call) => ({
        role: 'tool',
        tool_call_id: call.id,
        name: call.name,
        content: JSON.stringify({ order_id: 1042, status: 'shipped' }),
      })),
      { role: 'assistant', content: 'All shipped.' },
      ...turn(2),
    ]);
    const exported = await exportWrites(customer);
    expect(exported.code, exported.stderr).toBe(0);
    const written = JSON.parse(exported.writes.join(''));
    const whole = await wholeExport(customer);
    expect(whole.conversations[0].messages.filter((m: { damaged?: string }) => m.damaged)).toEqual(
      [],
    );
    // Every message of hers as stored, none marked damaged: the turn was never split between batches.
    const marked = written.conversations[0].messages.filter((m: { damaged?: string }) => m.damaged);
    expect(marked.map((m: { seq: number; damaged: string }) => `#${m.seq} ${m.damaged}`)).toEqual(
      [],
    );
    expect(written).toEqual(whole);
  });
});
