// The database is created on a first run, gains what is missing later, and is reset only when asked, saying what goes (going further's tables too).
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import {
  createScratchDatabase,
  useScratchDatabase,
  type ScratchDatabase,
} from '../../shared/testing/database.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';
import { newConversation, saveMessages } from '../memory.ts';
import { ensureDatabase, planReset, resetDatabase, TABLES } from '../setup-database.ts';
import { conversationTraceFile } from '../trace.ts';

const SETUP = fileURLToPath(new URL('../setup.ts', import.meta.url));
const SHOW = fileURLToPath(new URL('../show-conversation.ts', import.meta.url));
let db: ScratchDatabase;
const log: string[] = [];
/** This file's own trace folder: the reset deletes trace files, and no other test's. */
let logs: string;

beforeAll(async () => {
  db = await createScratchDatabase();
  await ensureDatabase((line) => log.push(line));
  logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-setup-logs-'));
});
afterAll(async () => {
  rmSync(logs, { recursive: true, force: true });
  await db.drop();
});

const tables = async () =>
  (
    await query<Array<{ name: string }>>(
      'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()',
    )
  )
    .map((r) => r.name)
    .sort();
const count = async (table: string) =>
  (await query<Array<{ n: number }>>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n;

/** Every row of the store, with dates as "days ago" so two runs seconds apart compare equal. */
async function snapshot() {
  const keys = {
    customers: 'id',
    products: 'id',
    orders: 'id',
    order_items: 'order_id, product_id',
  };
  const result: Record<string, unknown[]> = {};
  for (const [table, key] of Object.entries(keys)) {
    const rows = await query<Record<string, unknown>[]>(`SELECT * FROM ${table} ORDER BY ${key}`);
    result[table] = rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [
          k,
          v instanceof Date ? Math.round((Date.now() - v.getTime()) / 86_400_000) : v,
        ]),
      ),
    );
  }
  return result;
}

/** The rows there are now, as the reset's question lists them: "8 customers, … and 1 conversation (2 messages)". */
async function losses(): Promise<string> {
  const n = (value: number, noun: string) => `${value} ${noun}${value === 1 ? '' : 's'}`;
  const items = [
    n(await count('customers'), 'customer'),
    n(await count('products'), 'product'),
    `${n(await count('orders'), 'order')} (${n(await count('order_items'), 'order item')})`,
  ];
  const tickets = await count('tickets');
  if (tickets) items.push(n(tickets, 'support ticket'));
  const conversations = await count('conversations');
  if (conversations)
    items.push(`${n(conversations, 'conversation')} (${n(await count('messages'), 'message')})`);
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** A conversation with one saved turn and a ticket: what people wrote, which only an explicit reset may delete. */
async function somethingToLose(): Promise<string> {
  const conversation = newConversation(1);
  await saveMessages(conversation, [
    { message: { role: 'user', content: 'Hi' } },
    { message: { role: 'assistant', content: 'Hello!' } },
  ]);
  // One open ticket per request (going further keeps it so): an earlier test's is closed first.
  await query("UPDATE tickets SET status = 'closed'");
  await query(
    "INSERT INTO tickets (customer_id, category, summary) VALUES (1, 'other', 'Keep me')",
  );
  return conversation.id;
}

/** Runs `fn` on a scratch database of its own, then points this process back at the file's. */
async function onItsOwnDatabase(fn: (name: string) => Promise<void>): Promise<void> {
  const scratch = await createScratchDatabase();
  try {
    await fn(scratch.name);
  } finally {
    await scratch.drop();
    await useScratchDatabase(db.name);
  }
}

describe('a first run', () => {
  it('creates every table, the refund rule, the sample store and the help center, and says so', async () => {
    expect(await tables()).toEqual([...TABLES].sort());
    expect(log[0]).toBe(`Database "${db.name}": creating ${TABLES.join(', ')}.`);
    expect(log).toContain(`Database "${db.name}": defining the refund rule (functions.sql).`);
    expect(log).toContain(
      'Loaded the sample store into customers, products, orders, order_items (seed.sql).',
    );
    expect(log).toContainEqual(expect.stringMatching(/^Help center: 16 added/));
  });

  it('changes nothing when everything is there: no message, no row touched', async () => {
    const id = await somethingToLose();
    const before = await snapshot();
    const lines: string[] = [];
    await ensureDatabase((line) => lines.push(line));
    expect(lines).toEqual([]);
    expect(await snapshot()).toEqual(before);
    expect(await query('SELECT id FROM conversations WHERE id = ?', [id])).toHaveLength(1);
  });

  it('creates only what is missing: a database from the chapter before gains the memory tables and keeps the rest', async () => {
    await somethingToLose();
    const tickets = await count('tickets');
    for (const table of ['messages', 'conversations']) await query(`DROP TABLE ${table}`); // as a Part 5 database has it
    const lines: string[] = [];
    await ensureDatabase((line) => lines.push(line));
    expect(lines).toEqual([`Database "${db.name}": creating conversations, messages.`]);
    expect(await tables()).toEqual([...TABLES].sort());
    expect(await count('tickets')).toBe(tickets);
    expect(await count('orders')).toBe(20);
  });
});

describe('first runs started at the same moment', () => {
  it('take turns and all succeed, creating everything once', async () => {
    const scratch = await createScratchDatabase();
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () => ensureDatabase(() => {})),
      );
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await count('customers')).toBe(8);
      expect(await count('help_articles')).toBe(16);
    } finally {
      await scratch.drop();
      await useScratchDatabase(db.name);
    }
  });
});

describe('commands that only read', () => {
  it('never create tables: the core viewer says in one line what is missing and what to run', async () => {
    await onItsOwnDatabase(async (name) => {
      const result = await runScript(SHOW, ['a'.repeat(32)], { env: { DB_NAME: name } });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^Table "conversations" is missing from database "${name}" on MySQL at [^ ]+: this part has not set it up there yet\\. A first run of this part \\(npx tsx part-06/ask\\.ts "Hello"\\) creates what is missing and keeps everything else\\.\\n$`,
        ),
      );
      expect(await tables()).toEqual([]);
    });
  });
});

describe('setup.ts resets, and only when told to', () => {
  it('says what it would delete and changes nothing without a terminal to ask on or --yes', async () => {
    const id = await somethingToLose();
    const trace = conversationTraceFile(logs, id);
    mkdirSync(path.dirname(trace), { recursive: true });
    writeFileSync(trace, '{"type":"start","question":"Hi"}\n');
    const conversations = await count('conversations');
    const refused = await runInProcess(SETUP, [], { env: { DB_NAME: db.name, LOG_DIR: logs } });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe(
      `Resetting database "${db.name}" deletes ${await losses()}, with their trace files.\n`,
    );
    expect(refused.stdout).toMatch(
      /, \d+ support tickets? and \d+ conversations? \(\d+ messages?\), with their trace files\.\n$/,
    );
    expect(refused.stderr.split('\n')[0]).toBe(
      'Nothing was changed: to confirm, run npx tsx part-06/setup.ts --yes',
    );
    expect(await count('conversations')).toBe(conversations);
    expect(existsSync(trace)).toBe(true);
  });

  it('asks just the same when only the store changed: no ticket or conversation, but a customer added', async () => {
    for (const table of ['messages', 'conversations', 'tickets'])
      await query(`DELETE FROM ${table}`);
    await query("INSERT INTO customers (name, email) VALUES ('Added', 'added@example.com')");
    try {
      const customers = await count('customers');
      const refused = await runInProcess(SETUP, [], { env: { DB_NAME: db.name, LOG_DIR: logs } });
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe(
        `Resetting database "${db.name}" deletes ${await losses()}, with their trace files.\n`,
      );
      expect(refused.stderr.split('\n')[0]).toBe(
        'Nothing was changed: to confirm, run npx tsx part-06/setup.ts --yes',
      );
      expect(await count('customers')).toBe(customers);
    } finally {
      await query("DELETE FROM customers WHERE email = 'added@example.com'");
    }
  });

  it('asks nothing when nothing would be lost: no database yet, or only empty tables', async () => {
    const scratch = await createScratchDatabase();
    try {
      await useScratchDatabase(`${scratch.name}_never_created`);
      expect((await planReset()).losses).toEqual([]);
      await useScratchDatabase(scratch.name);
      await ensureDatabase(() => {});
      for (const table of [...TABLES].reverse()) await query(`DELETE FROM ${table}`);
      expect(await planReset()).toMatchObject({ losses: [], conversations: [] });
    } finally {
      await scratch.drop();
      await useScratchDatabase(db.name);
    }
  });

  it('resetDatabase gives the same store every time, removing anything added in between', async () => {
    await resetDatabase(() => {});
    const before = await snapshot();
    await query("INSERT INTO customers (name, email) VALUES ('Extra', 'extra@example.com')");
    await query("UPDATE orders SET status = 'cancelled' WHERE id = 1042");
    await resetDatabase(() => {});
    expect(await snapshot()).toEqual(before);
  });
});

describe('the sample store', () => {
  it("holds the chapters' facts: 1043 paid 20 days ago, 1042 paid 3 days ago, same customer", async () => {
    const rows = await query<
      Array<{ id: number; customer_id: number; status: string; days: number }>
    >(
      'SELECT id, customer_id, status, DATEDIFF(NOW(), paid_at) AS days FROM orders WHERE id IN (1042, 1043) ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1042, customer_id: 1, status: 'shipped', days: 3 },
      { id: 1043, customer_id: 1, status: 'delivered', days: 20 },
    ]);
  });

  it('has a believable store: every status, about 8 customers, 15 products, 20 orders', async () => {
    const statuses = await query<Array<{ status: string }>>(
      'SELECT DISTINCT status FROM orders ORDER BY status',
    );
    expect(statuses.map((r) => r.status).sort()).toEqual([
      'cancelled',
      'delivered',
      'paid',
      'pending',
      'refunded',
      'shipped',
    ]);
    const [counts] = await query<Array<Record<string, number>>>(
      `SELECT (SELECT COUNT(*) FROM customers) AS customers, (SELECT COUNT(*) FROM products) AS products,
              (SELECT COUNT(*) FROM orders) AS orders,
              (SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)) AS empty_orders`,
    );
    expect(counts).toEqual({ customers: 8, products: 15, orders: 20, empty_orders: 0 });
  });

  it('keeps unicode and apostrophes in names', async () => {
    const names = await query<Array<{ name: string }>>(
      'SELECT name FROM customers WHERE id IN (2, 3) ORDER BY id',
    );
    expect(names.map((r) => r.name)).toEqual(["Liam O'Brien", 'Sofia García']);
  });
});
