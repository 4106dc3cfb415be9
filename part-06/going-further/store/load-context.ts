// Loads only what the next question needs, so its cost does not grow with the conversation.
//
// The plain version is `buildContext(await loadMessages(id), budget)`: read every message, then keep
// what fits. At turn 10,000 that reads 40,000 rows to send a dozen. loadContext returns exactly the
// same context by reading the newest rows first, a batch at a time, collecting whole turns, and
// stopping as soon as the turns collected are over budget: buildContext would drop every older one.
// One thing it adds: a newest turn alone over budget is fitted (fit-results.ts), not sent whole.
import { query } from '../../../shared/db.ts';
import type { Message } from '../../../shared/llm/index.ts';
import {
  buildContext,
  compactTurn,
  turnChars,
  type Context,
  type MemoryBudget,
  type Turn,
} from '../../context.ts';
import { fitNewestTurn } from './fit-results.ts';
import { readHistory, type Damage, type StoredRow } from './read-history.ts';

/** Rows read per query: usually the first batch is already over budget. */
const BATCH_ROWS = 128;

export interface LoadedContext extends Context {
  /** False when older turns were never read, because they would all be dropped. */
  readAll: boolean;
  /** Rows left out as damaged, among those read. */
  damaged: Damage[];
  /** The conversation's highest seq (0 when it has no messages): where the next save continues. */
  lastSeq: number;
}

export async function loadContext(
  conversationId: string,
  budget: MemoryBudget,
): Promise<LoadedContext> {
  const turns: Message[][] = []; // complete turns, newest first
  const meter = new BudgetMeter(budget);
  const damaged: Damage[] = [];
  let collecting: StoredRow[] = []; // rows of the turn being collected, oldest first
  let lastSeq = 0;
  let beforeSeq = Number.MAX_SAFE_INTEGER;
  let reachedStart = false;
  let stoppedInBatch = false;

  const closeTurn = () => {
    const history = readHistory(collecting); // pairs calls with results inside this turn
    damaged.push(...history.damaged);
    collecting = [];
    if (history.messages.length === 0) return;
    turns.push(history.messages);
    meter.add(history.messages);
  };

  while (!reachedStart && !meter.overBudget) {
    const rows = await rowsBefore(conversationId, beforeSeq, BATCH_ROWS);
    reachedStart = rows.length < BATCH_ROWS;
    lastSeq ||= rows[0]?.seq ?? 0;
    for (const [i, row] of rows.entries()) {
      beforeSeq = row.seq;
      collecting.unshift(row);
      // A valid user message starts a turn: everything collected since belongs to it.
      if (startsTurn(row)) closeTurn();
      if (meter.overBudget) {
        stoppedInBatch = i < rows.length - 1;
        break;
      }
    }
  }
  // At the very start, messages before the first user message form a turn of their own.
  if (reachedStart && !meter.overBudget && collecting.length) closeTurn();

  damaged.sort((a, b) => a.seq - b.seq);
  const readAll = reachedStart && !stoppedInBatch && collecting.length === 0;
  // The newest turn is sent even alone over budget (buildContext): then what is sent of it is fitted.
  const context = fitNewestTurn(buildContext(turns.reverse().flat(), budget));
  return { ...context, readAll, damaged, lastSeq };
}

/**
 * Up to `limit` rows older than `beforeSeq`, newest first. The JSON column is read as text (CAST), so
 * a row the driver cannot parse is a damaged row like any other instead of an error for the query.
 */
function rowsBefore(conversationId: string, beforeSeq: number, limit: number) {
  return query<StoredRow[]>(
    `SELECT seq, role, CAST(data AS CHAR) AS data FROM messages
      WHERE conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
    [conversationId, beforeSeq, limit],
  );
}

function startsTurn(row: StoredRow): boolean {
  return row.role === 'user' && readHistory([row]).messages[0]?.role === 'user';
}

/**
 * The budget's measure, added up newest turn first with buildContext's rules. Once it is over
 * budget, buildContext would drop every older turn: loadContext stops reading there.
 */
class BudgetMeter {
  private chars = 0;
  private turns = 0;
  constructor(private readonly budget: MemoryBudget) {}

  /** Adds the next older turn, in the shape buildContext would send it. */
  add(turn: Turn): void {
    this.chars += turnChars(this.turns++ < this.budget.recentTurns ? turn : compactTurn(turn));
  }

  get overBudget(): boolean {
    return this.chars > this.budget.maxChars;
  }
}
