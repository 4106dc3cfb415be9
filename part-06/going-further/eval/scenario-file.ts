// The eval's scenario file (JSON), checked before anything runs: a mistake is one sentence naming its place.
import { UsageError } from '../../../shared/cli.ts';
import { printable } from '../../../shared/text.ts';
import { MAX_QUESTION_CHARS } from '../question/question-limit.ts';

/** How deep the `args` of a tool expectation may nest: real arguments are an object or two deep. */
const MAX_ARGS_DEPTH = 8;

/** The columns of a ticket an expectation may name (tickets opened during the trial). */
export const TICKET_COLUMNS = ['order_id', 'category', 'status', 'customer_id'] as const;
export type TicketColumns = Partial<Record<(typeof TICKET_COLUMNS)[number], string | number>>;

/** What must hold after a trial: about the tools called, the answers, and the database at the end. */
export type Expectation =
  | { tool: string; args?: Record<string, unknown>; turn?: number }
  | { noTool: string; beforeTurn?: number }
  | { ticket: TicketColumns }
  | { noTicket: TicketColumns }
  | { note: string }
  | { noNote: string }
  | { answer: string; turn?: number }
  | { notAnswer: string };

export interface Scenario {
  id: string;
  title: string;
  /** Who is signed in; the entry script fills in CUSTOMER_EMAIL when the file leaves it out. */
  customer?: string;
  /** Each list is one run of the chat (a process); a later one resumes the same conversation. */
  sittings: string[][];
  /** Each later sitting starts a new conversation instead (what customer notes are for). */
  newConversations?: boolean;
  expect: Expectation[];
}

/** The keys each kind of expectation may have: the first one names the kind. */
const KINDS: Record<string, string[]> = {
  tool: ['args', 'turn'],
  noTool: ['beforeTurn'],
  ticket: [],
  noTicket: [],
  note: [],
  noNote: [],
  answer: ['turn'],
  notAnswer: [],
};

/**
 * Reads a scenario file's text; `source` is how messages name the file, `tools` the names of the tools
 * Nimbus has (a misspelt one would fail every trial). Throws a UsageError.
 */
export function parseScenarios(text: string, source: string, tools: string[]): Scenario[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${source} is not valid JSON (${(error as Error).message}).`);
  }
  const file = record(data, source);
  allowOnly(file, ['scenarios'], source);
  const list = file.scenarios;
  if (!Array.isArray(list) || list.length === 0)
    throw new UsageError(`${source} needs "scenarios": a list of at least one scenario.`);
  const seen = new Set<string>();
  return list.map((item, i) => {
    const scenario = checkScenario(item, `${source}: scenarios[${i}]`, tools);
    if (seen.has(scenario.id))
      throw new UsageError(`${source}: scenarios[${i}] repeats the id "${scenario.id}".`);
    seen.add(scenario.id);
    return scenario;
  });
}

function checkScenario(item: unknown, at: string, tools: string[]): Scenario {
  const s = record(item, at);
  allowOnly(s, ['id', 'title', 'customer', 'sittings', 'newConversations', 'expect'], at);
  if (typeof s.id !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(s.id))
    throw new UsageError(`${at}.id must be letters, digits, "-", "_" or "." (at most 64).`);
  const here = `${at} ("${s.id}")`;
  if (typeof s.title !== 'string' || !s.title.trim())
    throw new UsageError(`${here}.title must be a non-empty text.`);
  if (s.customer !== undefined && (typeof s.customer !== 'string' || !s.customer.includes('@')))
    throw new UsageError(`${here}.customer must be an email address.`);
  if (s.newConversations !== undefined && typeof s.newConversations !== 'boolean')
    throw new UsageError(`${here}.newConversations must be true or false.`);
  const sittings = s.sittings;
  const isTurns = (list: unknown) =>
    Array.isArray(list) &&
    list.length > 0 &&
    list.every((turn) => typeof turn === 'string' && turn.trim() !== '');
  if (!Array.isArray(sittings) || sittings.length === 0 || !sittings.every(isTurns))
    throw new UsageError(
      `${here}.sittings must be a list of sittings, each a list of at least one non-empty message.`,
    );
  // The chat refuses a longer question: a trial would send what no customer can (and pay for it).
  for (const [i, sitting] of (sittings as string[][]).entries())
    for (const [j, turn] of sitting.entries())
      if (turn.length > MAX_QUESTION_CHARS)
        throw new UsageError(
          `${here}.sittings[${i}][${j}] is ${turn.length.toLocaleString('en-US')} characters long; a question may have at most ${MAX_QUESTION_CHARS.toLocaleString('en-US')}, as in the chat.`,
        );
  const turns = (sittings as string[][]).flat().length;
  if (!Array.isArray(s.expect) || s.expect.length === 0)
    throw new UsageError(`${here}.expect must be a list of at least one expectation.`);
  const expect = s.expect.map((e, j) => checkExpectation(e, `${here}.expect[${j}]`, turns, tools));
  return { ...(s as unknown as Scenario), expect };
}

function checkExpectation(item: unknown, at: string, turns: number, tools: string[]): Expectation {
  const e = record(item, at);
  const kind = Object.keys(e).find((key) => key in KINDS);
  if (!kind)
    throw new UsageError(`${at} must be one of ${Object.keys(KINDS).join(', ')} (as its key).`);
  allowOnly(e, [kind, ...KINDS[kind]], at);
  const value = e[kind];
  if (kind === 'ticket' || kind === 'noTicket') checkColumns(value, `${at}.${kind}`);
  else if (typeof value !== 'string' || !value.trim())
    throw new UsageError(`${at}.${kind} must be a non-empty text.`);
  if (['note', 'noNote', 'answer', 'notAnswer'].includes(kind))
    checkPattern(value, `${at}.${kind}`);
  if ((kind === 'tool' || kind === 'noTool') && !tools.includes(value as string))
    throw new UsageError(
      `${at}.${kind} names "${printable(String(value), { singleLine: true })}", which is not a tool of Nimbus (its tools: ${tools.join(', ')}).`,
    );
  if (e.args !== undefined) {
    record(e.args, `${at}.args`);
    if (depth(e.args) > MAX_ARGS_DEPTH)
      throw new UsageError(`${at}.args nests deeper than ${MAX_ARGS_DEPTH} levels.`);
  }
  for (const key of ['turn', 'beforeTurn']) {
    const n = e[key];
    if (n !== undefined && (!Number.isInteger(n) || (n as number) < 1 || (n as number) > turns))
      throw new UsageError(
        `${at}.${key} must be a turn number from 1 to ${turns} (turns count from 1 across sittings).`,
      );
  }
  return e as Expectation;
}

/** How deep a JSON value nests (an object or a list is one level), counted without recursion. */
function depth(value: unknown): number {
  let deepest = 0;
  const waiting: Array<[unknown, number]> = [[value, 1]];
  while (waiting.length) {
    const [next, level] = waiting.pop()!;
    if (typeof next !== 'object' || next === null) continue;
    deepest = Math.max(deepest, level);
    if (deepest > MAX_ARGS_DEPTH) return deepest; // deep enough to refuse: no need to walk the rest
    for (const child of Object.values(next)) waiting.push([child, level + 1]);
  }
  return deepest;
}

function checkColumns(value: unknown, at: string): void {
  const columns = record(value, at);
  allowOnly(columns, [...TICKET_COLUMNS], at);
  for (const [key, v] of Object.entries(columns))
    if (typeof v !== 'string' && typeof v !== 'number')
      throw new UsageError(`${at}.${key} must be a text or a number.`);
}

function checkPattern(value: unknown, at: string): void {
  try {
    new RegExp(String(value), 'i');
  } catch {
    throw new UsageError(
      `${at} is not a valid regular expression: ${printable(String(value), { singleLine: true })}`,
    );
  }
}

function record(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`${at} must be an object ({ … }).`);
  return value as Record<string, unknown>;
}

function allowOnly(value: Record<string, unknown>, keys: string[], at: string): void {
  const unknown = Object.keys(value).find((key) => !keys.includes(key));
  if (unknown !== undefined)
    throw new UsageError(
      `${at} has an unknown key "${printable(unknown, { singleLine: true })}" (allowed: ${keys.join(', ')}).`,
    );
}

/** The scenarios --only names (ids separated by commas), in the file's order; an unknown id is a usage error. */
export function selectScenarios(scenarios: Scenario[], only: string, source: string): Scenario[] {
  const ids = only
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean);
  if (!ids.length) throw new UsageError('--only needs scenario ids separated by commas.');
  const unknown = ids.find((id) => !scenarios.some((s) => s.id === id));
  if (unknown !== undefined)
    throw new UsageError(
      `--only names "${printable(unknown, { singleLine: true })}", which is not a scenario of ${source} (its ids: ${scenarios.map((s) => s.id).join(', ')}).`,
    );
  return scenarios.filter((s) => ids.includes(s.id));
}
