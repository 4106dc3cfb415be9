// Measures what memory costs per question as conversations grow: `npm run bench` (add -- --json for machine-readable output).
import { performance } from 'node:perf_hooks';
import mysql from 'mysql2/promise';
import {
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../../../shared/cli.ts';
import {
  connectionOptions,
  databaseSettings,
  explainDatabaseError,
  withDatabase,
} from '../../../shared/db.ts';
import { commandFor } from '../../../shared/hints.ts';
import type { Message } from '../../../shared/llm/index.ts';
import { printable, printableJson } from '../../../shared/text.ts';
import { buildContext, memoryBudget, type MemoryBudget } from '../../context.ts';
import {
  loadMessages,
  newConversation,
  type Conversation,
  type StoredMessage,
} from '../../memory.ts';
import { hardenedStore } from '../store/hardened-store.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';
import {
  ClusterDatabase,
  clusterSettings,
  openClusterDatabase,
} from '../store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--json] [--runs=N]', io)}

Creates a scratch database, fills conversations of 10, 100, 1,000 and 10,000 turns, and measures the
memory cost of one question (loadContext: load + build context) and of saving one turn, N times each
(default 40, at least 5). Then it compares the characters sent per request with and without trimming
over a 30-turn conversation. The scratch database is dropped at the end, also after Ctrl-C.`;
}

const SIZES = [10, 100, 1_000, 10_000];

export async function main(io: ScriptIo): Promise<void> {
  const { values } = parseFlags({
    args: io.args,
    options: { json: { type: 'boolean' }, runs: { type: 'string', default: '40' } },
  });
  if (!/^\d+$/.test(values.runs) || Number(values.runs) < 5)
    throw new UsageError(
      `--runs must be a whole number of at least 5 (got "${printable(values.runs, { singleLine: true })}").`,
    );
  const runs = Number(values.runs);
  // The budget the chat would use: MEMORY_MAX_CHARS and MEMORY_RECENT_TURNS from .env, or the defaults.
  const budget = memoryBudget(io.env);
  const log = values.json ? () => {} : (line: string) => io.error(line);

  const database = `nimbus_bench_${Date.now().toString(36)}`;
  const admin = await mysql.createConnection(connectionOptions()).catch((error) => {
    throw explainDatabaseError(error);
  });
  await admin.query(
    `CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
  );
  log(`Working in the scratch database ${database} (dropped at the end).`);
  // Interrupted (Ctrl-C, or the reader of a pipe went away): drop the scratch database before leaving.
  const scratch = new ClusterDatabase({ ...clusterSettings(io.env), database });
  const dropAndLeave = async () => {
    await scratch.close();
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => {});
    process.exit(130);
  };
  process.once('SIGINT', dropAndLeave);
  process.once('SIGTERM', dropAndLeave);
  io.stdout.on('error', dropAndLeave);
  try {
    await withDatabase(scratch, () => measure(io, admin, { runs, budget, json: values.json, log }));
  } finally {
    process.off('SIGINT', dropAndLeave);
    process.off('SIGTERM', dropAndLeave);
    io.stdout.off('error', dropAndLeave);
    await scratch.close();
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin.end();
  }
}

/** The whole measurement, in the scratch database. */
async function measure(
  io: ScriptIo,
  admin: mysql.Connection,
  {
    runs,
    budget,
    json,
    log,
  }: { runs: number; budget: MemoryBudget; json?: boolean; log: (line: string) => void },
): Promise<void> {
  // The tables the full Nimbus uses, with the sample store (its customer 1 owns the conversations).
  await ensureFullDatabase(() => {});
  await admin.query(`USE \`${databaseSettings().database}\``);

  // The store chat.ts uses, against the plain version: every message read, then trimmed.
  const store = hardenedStore(budget);
  const sizes = [];
  for (const turns of SIZES) {
    log(`Filling a conversation of ${turns} turns…`);
    const conversation = newConversation(1);
    const id = conversation.id;
    await fillConversation(admin, conversation, turns);
    // Warm up the connection pool and MySQL's buffer pool before measuring.
    for (let i = 0; i < 3; i++) await store.loadContext(conversation);
    const load = await timeRuns(runs, () => store.loadContext(conversation));
    const fullLoad = await timeRuns(Math.min(runs, turns >= 10_000 ? 5 : runs), async () =>
      buildContext(await loadMessages(id), budget),
    );
    const save = await timeRuns(runs, () =>
      store.saveStep(
        conversation,
        realisticTurn(turns).map((message) => ({ message })),
      ),
    );
    sizes.push({
      turns,
      load_ms_median: round(percentile(load, 50)),
      load_ms_p95: round(percentile(load, 95)),
      save_ms_median: round(percentile(save, 50)),
      full_load_ms_median: round(percentile(fullLoad, 50)),
    });
  }

  // Chars sent with each request of a 30-turn conversation: the trimmed history plus the new question,
  // against the whole history plus the new question.
  const history: Message[] = [];
  const charsPerRequest: number[] = [];
  const charsFullHistory: number[] = [];
  for (let t = 0; t < 30; t++) {
    const question: Message = { role: 'user', content: questionText(t) };
    const context = buildContext(history, budget);
    charsPerRequest.push(JSON.stringify([...context.messages, question]).length);
    charsFullHistory.push(JSON.stringify([...history, question]).length);
    history.push(...realisticTurn(t));
  }

  const report = {
    sizes,
    chars_per_request: charsPerRequest,
    chars_full_history: charsFullHistory,
  };
  if (json) io.log(printableJson({ budget, ...report }));
  else printTable(io, report, runs, budget);
}

/** A support turn as Nimbus stores it: question, a tool call with provider_raw, its result, the answer. */
function realisticTurn(t: number): StoredMessage[] {
  const orderId = 1030 + (t % 20);
  const callId = `call_${t.toString(16).padStart(16, '0')}`;
  const signature = Buffer.alloc(240, t % 256).toString('base64'); // Gemini signatures are long opaque strings
  return [
    { role: 'user', content: questionText(t) },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: callId, name: 'check_refund_eligibility', arguments: { order_id: orderId } },
      ],
      provider_raw: {
        provider: 'gemini',
        message: {
          role: 'model',
          parts: [
            {
              functionCall: { name: 'check_refund_eligibility', args: { order_id: orderId } },
              thoughtSignature: signature,
            },
          ],
        },
      },
    },
    {
      role: 'tool',
      tool_call_id: callId,
      name: 'check_refund_eligibility',
      content: JSON.stringify({
        order_id: orderId,
        status: 'delivered',
        days_since_purchase: 20,
        eligible: false,
        reason: 'Paid 20 days ago, outside the 14-day refund window.',
      }),
    },
    {
      role: 'assistant',
      content: `I'm sorry, order ${orderId} is outside the 14-day refund window: it was paid 20 days ago. If the item is faulty, the 12-month warranty may still cover a repair. Shall I open a warranty ticket?`,
      provider_raw: {
        provider: 'gemini',
        message: { role: 'model', parts: [{ text: 'I am sorry…', thoughtSignature: signature }] },
      },
    },
  ];
}

function questionText(t: number): string {
  return `Hi, this is question ${t}. Can I still get a refund for order ${1030 + (t % 20)}? The headphones stopped charging.`;
}

/** Inserts many turns quickly (500 rows per statement); the save itself is measured separately. */
async function fillConversation(
  db: mysql.Connection,
  conversation: Conversation,
  turns: number,
): Promise<void> {
  await db.query('INSERT INTO conversations (id, customer_id) VALUES (?, ?)', [
    conversation.id,
    conversation.customerId,
  ]);
  conversation.saved = true;
  let rows: unknown[][] = [];
  let seq = 0;
  for (let t = 0; t < turns; t++) {
    for (const message of realisticTurn(t)) {
      rows.push([conversation.id, ++seq, message.role, JSON.stringify(message)]);
    }
    if (rows.length >= 500 || t === turns - 1) {
      await db.query('INSERT INTO messages (conversation_id, seq, role, data) VALUES ?', [rows]);
      rows = [];
    }
  }
}

async function timeRuns(runs: number, fn: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return times;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function printTable(
  io: ScriptIo,
  report: {
    sizes: Array<Record<string, number>>;
    chars_per_request: number[];
    chars_full_history: number[];
  },
  runs: number,
  budget: MemoryBudget,
) {
  io.log(`Memory cost per question (${runs} runs each; ms)`);
  io.log('   turns   load+build median   p95   save median   full load+build median');
  for (const s of report.sizes) {
    io.log(
      `${String(s.turns).padStart(8)}   ${String(s.load_ms_median).padStart(17)}   ${String(s.load_ms_p95).padStart(5)}   ${String(s.save_ms_median).padStart(11)}   ${String(s.full_load_ms_median).padStart(22)}`,
    );
  }
  io.log(
    `\nCharacters sent per request over a 30-turn conversation (budget ${budget.maxChars} chars, the last ${budget.recentTurns} turns full; ~4 chars per token)`,
  );
  io.log('   turn   with buildContext   full history');
  report.chars_per_request.forEach((chars, i) => {
    if (i % 5 === 4 || i === 0) {
      const full = report.chars_full_history[i];
      io.log(
        `${String(i + 1).padStart(7)}   ${`${chars} (~${Math.round(chars / 4)} tok)`.padStart(17)}   ${`${full} (~${Math.round(full / 4)} tok)`.padStart(12)}`,
      );
    }
  });
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
