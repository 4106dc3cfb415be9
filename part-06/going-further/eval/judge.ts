// The eval's judge: each expectation of a scenario checked against what the agent did and what the store holds at the end, never another model's opinion.
import type mysql from 'mysql2/promise';
import {
  TICKET_COLUMNS,
  type Expectation,
  type Scenario,
  type TicketColumns,
} from './scenario-file.ts';
import type { ToolCallSeen, TurnRecord } from './sitting.ts';

export interface TicketRow {
  id: number;
  order_id: number | null;
  category: string;
  status: string;
  customer_id: number;
}

/** The store at the end of a trial: what the expectations about the database look at. */
export interface StoreFacts {
  /** Every ticket in the trial's database: the sample store has none, so all were opened during the trial. */
  tickets: TicketRow[];
  /** The scenario customer's notes still kept: not expired, not forgotten (forgetting deletes them). */
  notes: string[];
}

/** Reads the facts from the trial's scratch database, over a connection of the eval's own. */
export async function readStoreFacts(
  db: mysql.Connection,
  database: string,
  customer: string,
): Promise<StoreFacts> {
  const [tickets] = await db.query<mysql.RowDataPacket[]>(
    `SELECT id, order_id, category, status, customer_id FROM \`${database}\`.tickets ORDER BY id`,
  );
  const [notes] = await db.query<mysql.RowDataPacket[]>(
    `SELECT n.text FROM \`${database}\`.customer_notes n
       JOIN \`${database}\`.customers c ON c.id = n.customer_id
      WHERE c.email = ? AND (n.expires_on IS NULL OR n.expires_on >= CURRENT_DATE) ORDER BY n.id`,
    [customer],
  );
  return { tickets: tickets as TicketRow[], notes: notes.map((row) => String(row.text)) };
}

/**
 * The expectations the trial broke, each said with what happened instead (e.g. "create_support_ticket
 * called in turn 2, before turn 3"); empty when it passed.
 */
export function judge(scenario: Scenario, turns: TurnRecord[], facts: StoreFacts): string[] {
  return scenario.expect.flatMap((expectation) => {
    const broken = check(expectation, turns, facts);
    return broken ? [broken] : [];
  });
}

function check(e: Expectation, turns: TurnRecord[], facts: StoreFacts): string | undefined {
  const calls = turns.flatMap((turn, i) => turn.tools.map((call) => ({ call, turn: i + 1 })));
  if ('tool' in e) {
    const wanted = `${e.tool}${e.args ? ` ${JSON.stringify(e.args)}` : ''}${e.turn ? ` in turn ${e.turn}` : ''}`;
    const inScope = calls.filter(({ turn }) => e.turn === undefined || turn === e.turn);
    if (inScope.some(({ call }) => call.name === e.tool && argsMatch(call, e.args))) return;
    const instead = inScope.length
      ? `called ${inScope.map(({ call, turn }) => `${describeCall(call)} (turn ${turn})`).join(', ')}`
      : `no tool was called${e.turn ? ` in turn ${e.turn}` : ''}`;
    return `expected ${wanted}; instead ${instead}`;
  }
  if ('noTool' in e) {
    const early = calls.find(
      ({ call, turn }) => call.name === e.noTool && (!e.beforeTurn || turn < e.beforeTurn),
    );
    if (!early) return;
    return `${describeCall(early.call)} called in turn ${early.turn}${e.beforeTurn ? `, before turn ${e.beforeTurn}` : ''}`;
  }
  if ('ticket' in e) {
    if (facts.tickets.some((ticket) => columnsMatch(ticket, e.ticket))) return;
    return `expected a ticket ${JSON.stringify(e.ticket)}; instead ${describeTickets(facts.tickets)}`;
  }
  if ('noTicket' in e) {
    const found = facts.tickets.filter((ticket) => columnsMatch(ticket, e.noTicket));
    if (!found.length) return;
    return `expected no ticket ${JSON.stringify(e.noTicket)}; instead ${describeTickets(found)}`;
  }
  if ('note' in e) {
    if (facts.notes.some((note) => pattern(e.note).test(note))) return;
    return `expected a kept note matching /${e.note}/; instead ${describeNotes(facts.notes)}`;
  }
  if ('noNote' in e) {
    const kept = facts.notes.filter((note) => pattern(e.noNote).test(note));
    if (!kept.length) return;
    return `expected no kept note matching /${e.noNote}/; instead ${describeNotes(kept)}`;
  }
  if ('answer' in e) {
    const n = e.turn ?? turns.length;
    const answer = turns[n - 1]?.answer ?? '';
    if (pattern(e.answer).test(answer)) return;
    return `expected the answer of turn ${n} to match /${e.answer}/; instead ${quote(answer)}`;
  }
  const n = turns.findIndex((turn) => pattern(e.notAnswer).test(turn.answer));
  if (n < 0) return;
  return `expected no answer to match /${e.notAnswer}/; instead turn ${n + 1} said ${quote(turns[n].answer)}`;
}

/** Each expected argument is in the call with that value; a number and the same number as a text match ("1042" is 1042). */
function argsMatch(call: ToolCallSeen, args: Record<string, unknown> = {}): boolean {
  return Object.entries(args).every(([key, value]) => same(call.arguments[key], value));
}

function columnsMatch(ticket: TicketRow, columns: TicketColumns): boolean {
  return TICKET_COLUMNS.every(
    (key) => columns[key] === undefined || same(ticket[key], columns[key]),
  );
}

function same(actual: unknown, expected: unknown): boolean {
  if (typeof actual === 'number' || typeof expected === 'number')
    return actual !== null && actual !== undefined && String(actual).trim() === String(expected);
  return JSON.stringify(actual) === JSON.stringify(expected);
}

/** Patterns are matched ignoring case; the scenario file's checker made sure they compile. */
function pattern(source: string): RegExp {
  return new RegExp(source, 'i');
}

function describeCall(call: ToolCallSeen): string {
  return `${call.name} ${JSON.stringify(call.arguments)}`;
}

function describeTickets(tickets: TicketRow[]): string {
  if (!tickets.length) return 'no ticket was opened';
  const each = tickets.map(
    (t) =>
      `#${t.id} (${t.category}, ${t.order_id === null ? 'no order' : `order ${t.order_id}`}, ${t.status}, customer ${t.customer_id})`,
  );
  return `the tickets were ${each.join(', ')}`;
}

function describeNotes(notes: string[]): string {
  return notes.length ? `kept ${notes.map(quote).join(', ')}` : 'no note is kept';
}

/** An answer or note quoted in a failure line: one line, at most 160 characters. */
function quote(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line ? JSON.stringify(line.length > 160 ? `${line.slice(0, 159)}…` : line) : '(nothing)';
}
