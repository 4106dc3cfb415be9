// Part 2 end to end: ask.ts as a subprocess, a real database, the fake provider, both providers.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';

// This part's own ask.ts, found from this file, so the test always runs the code beside it.
const SCRIPT = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase(); // empty: the first run must set it up
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe.each(['gemini', 'openai'] as const)('ask.ts with %s', (provider) => {
  it('looks the order up with the tool and answers from the result', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      (view) => {
        const order = view.toolResults[0].result as { status: string; total: number };
        return { text: `Order 1042 is ${order.status}; the total was $${order.total}.` };
      },
    );
    // Run from inside the part's folder, as the README shows: paths must not depend on the working directory.
    const result = await runScript(SCRIPT, ['Where is my order 1042?'], {
      env: { ...fake.env(provider), DB_NAME: db.name },
      cwd: path.dirname(SCRIPT),
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Order 1042 is shipped; the total was $84.9.\n');
    expect(result.stderr).toContain('→ get_order_status({"order_id":1042})');
    expect(result.stderr).toMatch(/← \{"order_id":1042,"status":"shipped",/);
    const [first, second] = fake.chats().slice(-2);
    expect(first.view?.tools).toContain('get_order_status');
    expect(second.status).toBe(200);
  });
});

describe('ask.ts errors and first run', () => {
  it('set the empty database up on the first run and said so', async () => {
    const fresh = await createScratchDatabase();
    try {
      fake.reply({ text: 'Which order number?' });
      const result = await runInProcess(SCRIPT, ['Where is my order?'], {
        env: { ...fake.env('gemini'), DB_NAME: fresh.name },
      });
      expect(result.code).toBe(0);
      expect(result.stderr).toContain(
        `Database "${fresh.name}": creating customers, products, orders, order_items`,
      );
      expect(result.stdout).toBe('Which order number?\n');
      fake.reply({ text: 'Which order number?' });
      const again = await runInProcess(SCRIPT, ['Where is my order?'], {
        env: { ...fake.env('gemini'), DB_NAME: fresh.name },
      });
      expect(again.stderr).toBe('Signed in as Maya Patel (maya.patel@example.com).\n');
    } finally {
      await fresh.drop();
    }
  });

  it('names host, port and the variables to check when the database is unreachable', async () => {
    const result = await runInProcess(SCRIPT, ['Where is order 1042?'], {
      env: { ...fake.env('gemini'), DB_NAME: db.name, DB_PORT: '9' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Cannot reach MySQL at 127.0.0.1:9 (ECONNREFUSED). Start the database server (none yet? the Requirements in README.md at the repository root start one in one line), or check DB_HOST and DB_PORT in .env.\n',
    );
  });

  it('without a key: one line naming the variable, exit 1', async () => {
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('gemini'), GEMINI_API_KEY: '', DB_NAME: db.name },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'GEMINI_API_KEY is not set. Get a free key at https://aistudio.google.com/apikey and put it in .env\n',
    );
    expect(result.stdout).toBe('');
  });

  it('without a question: usage, exit 2', async () => {
    const missing = await runInProcess(SCRIPT, [], { env: fake.env('gemini') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      'Usage: npx tsx part-02/ask.ts [--customer=<email>] "your question"',
    );
  });
});
