// Going further: loads only what the next question needs, so its cost does not grow with the conversation.
//
// The plain version is `buildContext(await loadMessages(id))`: read every message, then keep what fits.
// At turn 10,000 that reads 40,000 rows to send a dozen. loadContext returns exactly the same context
// by reading the newest rows first, a batch at a time, collecting whole turns, and stopping as soon as
// the turns collected fill the budget: buildContext would drop every older turn anyway.
import type { Message } from '../shared/llm/index.ts';
import {
  BudgetMeter,
  buildContext,
  memoryBudget,
  type Context,
  type MemoryBudget,
} from './context.ts';
import { loadRowsBefore, warnDamaged } from './memory.ts';
import { readHistory, type Damage, type StoredRow } from './stored-history.ts';

/** Rows read per query: usually the first batch already fills the budget. */
const BATCH_ROWS = 128;

export interface LoadedContext extends Context {
  /** False when older turns were never read because they would all be dropped (so `dropped` counts only those read). */
  readAll: boolean;
}

export async function loadContext(
  conversationId: string,
  budget: MemoryBudget = memoryBudget(),
  onDamaged = warnDamaged,
): Promise<LoadedContext> {
  const turns: Message[][] = []; // complete turns, newest first
  const meter = new BudgetMeter(budget);
  const damaged: Damage[] = [];
  let collecting: StoredRow[] = []; // rows of the turn being collected, oldest first
  let beforeId = Number.MAX_SAFE_INTEGER;
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

  while (!reachedStart && !meter.full) {
    const rows = await loadRowsBefore(conversationId, beforeId, BATCH_ROWS);
    reachedStart = rows.length < BATCH_ROWS;
    for (const [i, row] of rows.entries()) {
      beforeId = row.id;
      collecting.unshift(row);
      // A valid user message starts a turn: everything collected since belongs to it.
      if (startsTurn(row)) closeTurn();
      if (meter.full) {
        stoppedInBatch = i < rows.length - 1;
        break;
      }
    }
  }
  // At the very start, messages before the first user message form a turn of their own.
  if (reachedStart && !meter.full && collecting.length) closeTurn();

  if (damaged.length) onDamaged(conversationId, damaged);
  const readAll = reachedStart && !stoppedInBatch && collecting.length === 0;
  return { ...buildContext(turns.reverse().flat(), budget), readAll };
}

function startsTurn(row: StoredRow): boolean {
  return row.role === 'user' && readHistory([row]).messages[0]?.role === 'user';
}
