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

  it('exits 1 after the fallback answer when the provider cannot answer', async () => {
    // No credit left: not retried, so the customer hears at once that the service cannot be reached.
    fake.reply({ error: { status: 429, code: 'insufficient_quota' } });
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('openai'), DB_NAME: db.name },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("Sorry, I can't reach my assistant service right now.");
    expect(result.stderr).toContain(
      '[step 1] provider error: The OpenAI-compatible server says the account has no quota left',
    );
  });

  it('says what the provider refused, not "try again later", when it calls the request invalid (400)', async () => {
    fake.reply({
      error: { status: 400, message: 'Bad request: messages[3] has no tool call id.' },
    });
    const result = await runInProcess(SCRIPT, ['--quiet', 'Hello'], {
      env: { ...fake.env('openai'), DB_NAME: db.name },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'Sorry, my assistant service refused to answer in this conversation.',
    );
    expect(result.stderr).toContain('Bad request: messages[3] has no tool call id.');
  });

  it('a wrong key is one clear line and exit 1', async () => {
    fake.reply({ error: { status: 401 } });
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('gemini'), DB_NAME: db.name },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n').at(-1)).toBe(
      'Gemini rejected the API key (401). Check GEMINI_API_KEY in .env (get one at https://aistudio.google.com/apikey).',
    );
  });

  it('without a question: usage and exit 2', async () => {
    const missing = await runInProcess(SCRIPT, [], { env: fake.env('gemini') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Usage: npx tsx part-06/ask.ts');
  });

  it('an unreachable database is one line naming host and port, exit 1', async () => {
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('gemini'), DB_NAME: db.name, DB_HOST: '127.0.0.1', DB_PORT: '9' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Cannot reach MySQL at 127.0.0.1:9 (ECONNREFUSED). Start the database server (none yet? the Requirements in README.md at the repository root start one in one line), or check DB_HOST and DB_PORT in .env.\n',
    );
  });
});
