// Measures search_past_conversations as one customer's history grows, and what it costs another customer: `npx tsx part-06/going-further/ops/bench-search.ts`.
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
  withTransaction,
} from '../../../shared/db.ts';
import { commandFor } from '../../../shared/hints.ts';
import { printable } from '../../../shared/text.ts';
import type { StoredMessage } from '../../memory.ts';
import { ensureFullDatabase } from '../store/ensure-tables.ts';
import { searchPastConversations } from '../notes/past-conversations.ts';
import { indexMessages } from '../store/message-words.ts';
import {
  ClusterDatabase,
  clusterSettings,
  openClusterDatabase,
} from '../store/cluster-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--runs=N]', io)}

Creates a scratch database and gives one customer 100, 1,000, 10,000 and 100,000 stored messages
(questions and answers, 20 per conversation, saved with their word index as the chat saves them),
measuring at each size a search for a rare word, a word in about one message in ten, and a word in
every message, N times each (default 20). A second customer with 100 messages searches before the
first has any and again once the first holds 100,000. The scratch database is dropped at the end.`;
}

const SIZES = [100, 1_000, 10_000, 100_000];
const PER_CONVERSATION = 20;
const SEARCHES = { rare: 'periwinkle', tenth: 'warranty', every: 'order' };
const OTHER_CUSTOMER = 2;

export async function main(io: ScriptIo): Promise<void> {
  const { values } = parseFlags({
    args: io.args,
    options: { runs: { type: 'string', default: '20' } },
  });
  if (!/^\d+$/.test(values.runs) || Number(values.runs) < 5)
    throw new UsageError(
      `--runs must be a whole number of at least 5 (got "${printable(values.runs, { singleLine: true })}").`,
    );
  const runs = Number(values.runs);
  const database = `nimbus_bench_search_${Date.now().toString(36)}`;
  const admin = await mysql.createConnection(connectionOptions()).catch((error) => {
    throw explainDatabaseError(error);
  });
  const scratch = new ClusterDatabase({ ...clusterSettings(io.env), database });
  const dropAndLeave = async () => {
    await scratch.close();
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``).catch(() => {});
    process.exit(130);
  };
  process.once('SIGINT', dropAndLeave);
  try {
    await withDatabase(scratch, () => measure(io, runs));
  } finally {
    process.off('SIGINT', dropAndLeave);
    await scratch.close();
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin.end();
  }
}

/** The whole measurement, in the scratch database. */
async function measure(io: ScriptIo, runs: number): Promise<void> {
  await ensureFullDatabase(() => {});
  io.error(`Working in the scratch database ${databaseSettings().database} (dropped at the end).`);
  await fill(OTHER_CUSTOMER, 0, 100);
  const alone = await timeSearches(OTHER_CUSTOMER, runs);
  io.log(`Search over one customer's messages, median of ${runs} (ms):`);
  io.log('  messages      rare    1 in 10     every');
  let held = 0;
  for (const size of SIZES) {
    io.error(`Filling customer 1 up to ${size.toLocaleString('en-US')} messages…`);
    await fill(1, held, size);
    held = size;
    io.log(row(size.toLocaleString('en-US'), await timeSearches(1, runs)));
  }
  const crowded = await timeSearches(OTHER_CUSTOMER, runs);
  io.log(`\nA customer with 100 messages, while another holds none, then 100,000 (ms):`);
  io.log(row('none', alone));
  io.log(row('100,000', crowded));
}

function row(label: string, times: Record<keyof typeof SEARCHES, number>): string {
  const cell = (ms: number) => ms.toFixed(2).padStart(10);
  return `${label.padStart(10)}${cell(times.rare)}${cell(times.tenth)}${cell(times.every)}`;
}

/** The median time of each search, for this customer, from a conversation of theirs not yet saved. */
async function timeSearches(customerId: number, runs: number) {
  const times = {} as Record<keyof typeof SEARCHES, number>;
  for (const [name, word] of Object.entries(SEARCHES) as Array<[keyof typeof SEARCHES, string]>) {
    await searchPastConversations(customerId, word, 'f'.repeat(32)); // warm up
    const taken: number[] = [];
    for (let i = 0; i < runs; i++) {
      const start = performance.now();
      await searchPastConversations(customerId, word, 'f'.repeat(32));
      taken.push(performance.now() - start);
    }
    times[name] = taken.sort((a, b) => a - b)[Math.floor(runs / 2)];
  }
  return times;
}

/** Gives the customer messages number `from` to `to` of theirs, in conversations of 20, with their words indexed. */
async function fill(customerId: number, from: number, to: number): Promise<void> {
  for (let first = from; first < to; first += 50 * PER_CONVERSATION) {
    const last = Math.min(to, first + 50 * PER_CONVERSATION);
    await withTransaction(async (db) => {
      for (let n = first; n < last; n += PER_CONVERSATION) {
        const id = `${customerId.toString(16).padStart(8, '0')}${n.toString(16).padStart(24, '0')}`;
        await db.query('INSERT INTO conversations (id, customer_id) VALUES (?, ?)', [
          id,
          customerId,
        ]);
        const messages = Array.from({ length: PER_CONVERSATION }, (_, i) => message(n + i));
        await db.query('INSERT INTO messages (conversation_id, seq, role, data) VALUES ?', [
          messages.map((m, i) => [id, i + 1, m.role, JSON.stringify(m)]),
        ]);
        await indexMessages(db, customerId, id, 1, messages);
      }
    });
  }
}

/** The n-th message: a question or an answer of a support chat, "order" in each, "warranty" in one in ten, "periwinkle" once. */
function message(n: number): StoredMessage {
  const order = 1000 + (n % 500);
  const extra = n % 10 === 3 ? ' Is it still under warranty?' : '';
  const rare = n === 8 ? ' The colour was periwinkle.' : '';
  return n % 2 === 0
    ? {
        role: 'user',
        content: `Hi, question ${n} about order ${order}: the headphones stopped charging.${extra}${rare}`,
      }
    : {
        role: 'assistant',
        content: `Order ${order} was delivered ${n % 30} days ago. I can open a ticket for a repair or a replacement.${extra}`,
      };
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
