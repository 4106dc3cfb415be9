// The agent loop through the fake provider, for both providers, against a real database.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dbSettings, logDir } from '../../shared/config.ts';
import { query, useDatabase } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import {
  API_ERROR_ANSWER,
  EMPTY_ANSWER,
  MAX_STEPS,
  runAgent,
  type AgentOptions,
  STEP_LIMIT_ANSWER,
} from '../agent.ts';
import { REPEATED_CALL_ERROR } from '../safe-run-tool.ts';
import { ensureDatabase } from '../setup-database.ts';

const maya = { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' };

let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});
afterEach(() => {
  // Every reply we scripted was used, and the fake API accepted every request we sent except
  // the errors we scripted on purpose: no call ever went out without its result.
  expect(fake.pending()).toBe(0);
  expect(fake.chats().filter((r) => r.rejection)).toEqual([]);
});

const result = (view: { toolResults: Array<{ result: unknown }> }, i = 0) =>
  view.toolResults[i].result as Record<string, any>;

function readTrace(file: string) {
  return readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));
}

describe.each(['gemini', 'openai'] as const)('runAgent with %s', (provider) => {
  let options: AgentOptions;
  beforeEach(async () => {
    options = { llm: fake.llm(provider), logDir: logDir(process.env), quiet: true };
    fake.requests.length = 0;
    await query("UPDATE tickets SET status = 'closed'"); // each test opens its tickets afresh
  });

  it('works through a two-step task: look up, check eligibility, answer', async () => {
    fake.reply(
      { tool_calls: [{ name: 'list_customer_orders', arguments: {} }] },
      (view) => ({
        tool_calls: [
          {
            name: 'check_refund_eligibility',
            arguments: { order_id: result(view).orders[1].order_id },
          },
        ],
      }),
      (view) => ({ text: `Order ${result(view).order_id}: ${result(view).reason}` }),
    );
    const outcome = await runAgent('Can I return my headphones?', maya, options);
    expect(outcome).toMatchObject({
      answer: 'Order 1043: Paid 20 days ago, outside the 14-day refund window.',
      outcome: 'answered',
      steps: 3,
    });
    expect(outcome.usage.input_tokens).toBeGreaterThan(0);
    // The last request carried the whole history of the question: both calls and both results.
    const last = fake.chats()[2].view!;
    expect(last.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
  });

  it('runs parallel calls of one step and sends all results back together', async () => {
    fake.reply(
      {
        tool_calls: [
          { name: 'get_order_status', arguments: { order_id: 1042 } },
          { name: 'get_order_status', arguments: { order_id: 1043 } },
        ],
      },
      (view) => ({ text: view.toolResults.map((r: any) => r.result.status).join(', ') }),
    );
    const outcome = await runAgent('Where are orders 1042 and 1043?', maya, options);
    expect(outcome).toMatchObject({ answer: 'shipped, delivered', steps: 2 });
  });

  it('stops at the step limit with a friendly answer', async () => {
    fake.reply(
      ...Array.from({ length: MAX_STEPS - 1 }, (_, i) => ({
        tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1030 + i } }],
      })),
      // The last step asks to act: nothing runs, as no model call is left to tell the customer.
      {
        tool_calls: [
          {
            name: 'create_support_ticket',
            arguments: { category: 'other', summary: 'Opened at the step limit.' },
          },
        ],
      },
    );
    const outcome = await runAgent('Tell me everything', maya, options);
    expect(outcome).toMatchObject({
      answer: STEP_LIMIT_ANSWER,
      outcome: 'step_limit',
      steps: MAX_STEPS,
    });
    expect(fake.chats()).toHaveLength(MAX_STEPS);
    expect(readTrace(outcome.traceFile).map((e) => e.type)).toContain('step_limit');
  });

  it('refuses a third identical call, even with its arguments in another order', async () => {
    const args = { category: 'refund', summary: 'Same again', order_id: 1042 };
    const reordered = { order_id: 1042, summary: 'Same again', category: 'refund' };
    fake.reply(
      { tool_calls: [{ name: 'create_support_ticket', arguments: args }] },
      { tool_calls: [{ name: 'create_support_ticket', arguments: args }] },
      { tool_calls: [{ name: 'create_support_ticket', arguments: reordered }] },
      (view) => ({ text: JSON.stringify(result(view)) }),
    );
    const outcome = await runAgent('Open a refund ticket for 1042', maya, options);
    expect(outcome.answer).toBe(JSON.stringify({ error: REPEATED_CALL_ERROR }));
    const results = readTrace(outcome.traceFile)
      .filter((e) => e.type === 'tool_result')
      .map((e) => e.result);
    expect(results[0]).toMatchObject({ created: true });
    expect(results[1]).toEqual({
      created: false,
      already_open: true,
      ticket_id: results[0].ticket_id,
      status: 'open',
    });
    expect(results[2]).toEqual({ error: REPEATED_CALL_ERROR });
  });

  it('answers each call whose arguments are not an object with the argument error, the third too', async () => {
    // OpenAI sends arguments as JSON text, Gemini as a value: both can be something else than an object.
    const broken = (n: number) => ({
      tool_calls: [
        {
          name: 'get_order_status',
          arguments: provider === 'openai' ? `{"order_id": ${n}` : `${n}`,
        },
      ],
    });
    fake.reply(broken(1042), broken(1043), broken(1044), { text: 'Sorry.' });
    const outcome = await runAgent('Where is my order?', maya, options);
    const results = readTrace(outcome.traceFile)
      .filter((e) => e.type === 'tool_result')
      .map((e) => e.result.error);
    expect(results).toHaveLength(3);
    for (const error of results)
      expect(error).toMatch(/^The arguments were not a (valid )?JSON object/);
  });

  it('answers an unknown tool with an error result and carries on', async () => {
    fake.reply(
      { tool_calls: [{ name: 'issue_refund_now', arguments: { order_id: 1042 } }] },
      (view) => ({ text: `Tool said: ${result(view).error}` }),
    );
    const outcome = await runAgent('Refund 1042 now', maya, options);
    expect(outcome.answer).toMatch(/^Tool said: Unknown tool "issue_refund_now"/);
    expect(outcome.outcome).toBe('answered');
  });

  it('turns a tool that throws (the database went away) into a result, and records why', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      (view) => ({ text: `Sorry: ${result(view).error}` }),
    );
    // Nothing listens on port 9: every query now fails.
    const restore = await useDatabase(dbSettings({ ...process.env, DB_PORT: '9' }));
    try {
      const outcome = await runAgent('Where is 1042?', maya, options);
      expect(outcome.answer).toBe(
        'Sorry: get_order_status failed because of a technical problem. Apologise and suggest trying again later.',
      );
      const event = readTrace(outcome.traceFile).find((e) => e.type === 'tool_result');
      expect(event.exception).toMatch(/^Cannot reach MySQL at .*:9/);
    } finally {
      await useDatabase(restore);
    }
  });

  it('gives a friendly answer when the provider fails mid-loop', async () => {
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { error: { status: 400, message: 'Request contains an invalid argument.' } },
    );
    const outcome = await runAgent('Where is 1042?', maya, options);
    expect(outcome).toMatchObject({ answer: API_ERROR_ANSWER, outcome: 'api_error', steps: 2 });
    const error = readTrace(outcome.traceFile).find((e) => e.type === 'api_error');
    expect(error).toMatchObject({
      step: 2,
      status: 400,
      message: expect.stringContaining('Request contains an invalid argument.'),
    });
  });

  it("stops with the provider's message when the key is wrong", async () => {
    fake.reply({ error: { status: 401 } });
    await expect(runAgent('Hello', maya, options)).rejects.toThrow(
      provider === 'gemini' ? /GEMINI_API_KEY/ : /OPENAI_API_KEY/,
    );
  });

  it('asks to rephrase when the final answer is empty', async () => {
    fake.reply({ text: '   ' });
    expect(await runAgent('Hmm', maya, options)).toMatchObject({
      answer: EMPTY_ANSWER,
      outcome: 'empty_answer',
      steps: 1,
    });
  });

  it('carries on with one warning when the trace cannot be written', async () => {
    const logs = mkdtempSync(path.join(os.tmpdir(), 'nimbus-trace-'));
    writeFileSync(path.join(logs, 'traces'), ''); // a file where the traces folder should be
    let warnings = '';
    const stderr = new Writable({
      write(chunk, _encoding, done) {
        warnings += chunk.toString();
        done();
      },
    });
    fake.reply({ text: 'Still here.' });
    try {
      const answered = await runAgent('Hello?', maya, { ...options, logDir: logs, stderr });
      expect(answered.answer).toBe('Still here.');
    } finally {
      rmSync(logs, { recursive: true, force: true });
    }
    expect(warnings.trimEnd()).toMatch(
      /^warning: could not write the trace .*\.jsonl \(ENOTDIR\); carrying on without it\.$/,
    );
  });

  it('writes escape sequences and hidden characters to the trace escaped, so cat shows them, and as written once parsed', async () => {
    const question = 'Where is \u202e2401\u202c, my zero\u200bwidth order?';
    fake.reply({ text: 'Red \u009b31malert\u009b0m.' });
    const { traceFile: file } = await runAgent(question, maya, options);
    expect(readFileSync(file, 'utf8')).not.toMatch(/[\u009b\u200b\u202c\u202e]/);
    const events = readTrace(file);
    expect(events.find((e) => e.type === 'start').question).toBe(question);
    expect(events.find((e) => e.type === 'end').answer).toBe('Red \u009b31malert\u009b0m.');
  });

  it('keeps its trace private: the file for our user only (0600), and the folders it creates (0700)', async () => {
    // Traces hold customers' questions and orders.
    const base = mkdtempSync(path.join(os.tmpdir(), 'nimbus-trace-'));
    const logs = path.join(base, 'logs');
    fake.reply({ text: 'Hello.' });
    try {
      const { traceFile } = await runAgent('Hello?', maya, { ...options, logDir: logs });
      const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
      expect([mode(traceFile), mode(path.dirname(traceFile)), mode(logs)]).toEqual([
        '600',
        '700',
        '700',
      ]);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('writes every event as one well-formed JSON line with a timestamp', async () => {
    fake.reply(
      { tool_calls: [{ name: 'check_refund_eligibility', arguments: { order_id: 1043 } }] },
      { text: 'Not eligible, sorry.' },
    );
    const outcome = await runAgent('Refund for 1043?', maya, options);
    const events = readTrace(outcome.traceFile);
    expect(events.map((e) => e.type)).toEqual([
      'start',
      'tool_call',
      'tool_result',
      'final_answer',
      'end',
    ]);
    for (const event of events) {
      expect(new Date(event.ts).toISOString()).toBe(event.ts);
      expect(event.trace).toBe(events[0].trace);
    }
    expect(events[0]).toMatchObject({ question: 'Refund for 1043?' });
    expect(events[1]).toMatchObject({
      step: 1,
      name: 'check_refund_eligibility',
      arguments: { order_id: 1043 },
      ms: expect.any(Number),
    });
    expect(events[2]).toMatchObject({ step: 1, result: { eligible: false } });
    expect(events[3]).toMatchObject({ step: 2, ms: expect.any(Number) });
    expect(events[4]).toMatchObject({
      answer: 'Not eligible, sorry.',
      outcome: 'answered',
      steps: 2,
      tokens: outcome.usage,
    });
  });
});
