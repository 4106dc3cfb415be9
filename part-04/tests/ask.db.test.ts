// End to end: ask.ts as a subprocess, with its trace lines, for both providers.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';

// This part's own script, found from this file, so the test always runs the code beside it.
const SCRIPT = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase(); // empty: the first run sets it up
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

const refundScript = [
  { tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }] },
  (view: any) => ({
    text: `Sorry, order 1043 can't be refunded: ${view.toolResults[0].result.reason}`,
  }),
];

describe.each(['gemini', 'openai'] as const)('ask.ts with %s', (provider) => {
  it('prints the trace lines while working, then the answer and the outcome', async () => {
    fake.reply(...refundScript);
    const result = await runScript(SCRIPT, ['Can I get a refund for order 1043?'], {
      env: { ...fake.env(provider), DB_NAME: db.name },
      cwd: path.dirname(SCRIPT),
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      "Sorry, order 1043 can't be refunded: Paid 20 days ago, outside the 14-day refund window.\n",
    );
    expect(result.stderr).toMatch(
      /\[step 1\] model → check_refund_eligibility\(\{"order_id":1043\}\) \(\d+ ms\)/,
    );
    expect(result.stderr).toMatch(/\[step 1\] tool ← \{"order_id":1043,"status":"delivered",/);
    expect(result.stderr).toMatch(/\[step 2\] model answered \(\d+ ms\)/);
    expect(result.stderr).toMatch(/\(answered after 2 steps, \d+ tokens\)/);
  });
});

describe('ask.ts options and errors', () => {
  it('--quiet hides the trace lines', async () => {
    fake.reply(...refundScript);
    const result = await runInProcess(SCRIPT, ['--quiet', 'Refund for 1043?'], {
      env: { ...fake.env('gemini'), DB_NAME: db.name },
    });
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('[step');
  });

  it('exits 1 after the fallback answer when the provider keeps failing', async () => {
    fake.reply({ error: { status: 400, message: 'Bad request' } });
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('openai'), DB_NAME: db.name },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("Sorry, I can't reach my assistant service right now.");
    expect(result.stderr).toContain(
      '[step 1] provider error: The OpenAI-compatible server answered 400: Bad request',
    );
  });

  it('without a key: that is the first and only thing said, before any setup, exit 1', async () => {
    const never = `nimbus_test_never_${Date.now().toString(36)}`;
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('gemini'), GEMINI_API_KEY: '', DB_NAME: never },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'GEMINI_API_KEY is not set. Get a free key at https://aistudio.google.com/apikey and put it in .env\n',
    );
    expect(result.stdout).toBe('');
  });

  it('without a question: usage and exit 2', async () => {
    const missing = await runInProcess(SCRIPT, [], { env: fake.env('gemini') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Usage: npx tsx part-04/ask.ts');
  });
});
