// What show-conversation prints, as lines: a conversation turn by turn, the next context turn by turn, and an export.
import { dim } from '../shared/cli.ts';
import type { Message } from '../shared/llm/index.ts';
import { oneLine, printable, shorten } from '../shared/text.ts';
import { splitIntoTurns, type Context, type MemoryBudget } from './context.ts';
import type { ConversationSummary, FullRow } from './memory.ts';
import type { History } from './stored-history.ts';

/** Recent conversations, newest first, one line each, with whose they are. */
export function listView(
  conversations: Array<ConversationSummary & { first_question: string | null }>,
): string[] {
  return [
    'Recent conversations (newest first):',
    ...conversations.map((c) => {
      const first = c.first_question === null ? '' : shorten(oneLine(c.first_question), 60);
      return `  ${c.id}  ${when(c.updated_at)}  ${safe(c.customer_email).padEnd(28)} ${String(c.messages).padStart(4)} messages  ${safe(first)}`;
    }),
  ];
}

/** Every stored row in order, grouped into turns, with what each turn's model calls cost. */
export function turnsView(
  conversation: ConversationSummary & { customer_name: string },
  rows: FullRow[],
  history: History,
): string[] {
  const lines: string[] = [];
  const print = (line: string) => lines.push(line);
  print(
    `Conversation ${conversation.id} of ${safe(conversation.customer_name)} (${safe(conversation.customer_email)}): ` +
      `${count(rows.length, 'message')} in ${count(splitIntoTurns(history.messages).length, 'turn')}, ` +
      `started ${when(conversation.created_at)}, last updated ${when(conversation.updated_at)}`,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  const damaged = new Map(history.damaged.map((d) => [d.id, d.reason]));
  const total = { in: 0, out: 0, calls: 0 };
  let turnNumber = 0;
  let turnCost = { in: 0, out: 0, calls: 0 };
  const endTurn = () => {
    if (turnNumber > 0 && turnCost.calls)
      print(
        dim(
          `    ${count(turnCost.calls, 'model call')}: ${n(turnCost.in)} input + ${n(turnCost.out)} output tokens`,
        ),
      );
  };
  // Rows and kept messages are both in id order: one cursor walks the rows, showing the damaged ones in place.
  let cursor = 0;
  const showDamagedBefore = (id: number) => {
    for (; cursor < rows.length && rows[cursor].id < id; cursor++) {
      const row = rows[cursor];
      if (!damaged.has(row.id)) continue;
      const raw = typeof row.data === 'string' ? row.data : JSON.stringify(row.data);
      print(
        `  #${row.id} [left out: ${safe(damaged.get(row.id)!)}] ${safe(row.role)}: ${safe(shorten(raw, 120))}`,
      );
    }
  };

  history.messages.forEach((message, i) => {
    const id = history.ids[i];
    if (id !== undefined) showDamagedBefore(id);
    if (message.role === 'user' || turnNumber === 0) {
      endTurn();
      turnNumber++;
      turnCost = { in: 0, out: 0, calls: 0 };
      print(`Turn ${turnNumber}`);
    }
    if (id === undefined)
      return void print(
        dim(
          `  (not stored) ${describeMessage(message)} — added when sent, because the answer never came`,
        ),
      );
    const row = byId.get(id)!;
    const note = row.storage_note ? dim(` [stored with changes: ${safe(row.storage_note)}]`) : '';
    print(`  #${id} ${describeMessage(message)}${note}`);
    if (row.input_tokens !== null) {
      turnCost = {
        in: turnCost.in + row.input_tokens,
        out: turnCost.out + (row.output_tokens ?? 0),
        calls: turnCost.calls + 1,
      };
      total.in += row.input_tokens;
      total.out += row.output_tokens ?? 0;
      total.calls++;
    }
  });
  showDamagedBefore(Number.MAX_SAFE_INTEGER);
  endTurn();
  print(
    `Tokens: ${n(total.in)} input + ${n(total.out)} output over ${count(total.calls, 'model call')}.`,
  );
  return lines;
}

/** The turn-by-turn view of buildContext: each turn's fate and size, the budget, then the exact messages. */
export function contextView(
  id: string,
  context: Context,
  budget: MemoryBudget,
  rows: FullRow[],
): string[] {
  const lines: string[] = [];
  const print = (line: string) => lines.push(line);
  print(`Context for the next question in conversation ${id}`);
  print(
    `(budget ${n(budget.maxChars)} chars, the last ${count(budget.recentTurns, 'turn')} full):\n`,
  );
  print('  turn  fate         stored     sent    total  question');
  let total = 1; // the budget's measure starts with the "[" of the JSON array
  context.turns.forEach((turn, i) => {
    if (turn.fate !== 'dropped') total += turn.sentChars;
    const question =
      turn.turn[0]?.role === 'user'
        ? turn.turn[0].content
        : '(no question: messages before the first one)';
    const line =
      `  ${String(i + 1).padStart(4)}  ${turn.fate.padEnd(10)} ${n(turn.storedChars).padStart(7)}  ${n(turn.sentChars).padStart(7)}  ` +
      `${(turn.fate === 'dropped' ? '—' : n(total)).padStart(7)}  ${safe(shorten(oneLine(question), 50))}`;
    print(turn.fate === 'dropped' ? dim(line) : line);
  });
  if (context.turns.length === 0) print('  (no turns yet)');

  const used = Math.min(1, context.chars / budget.maxChars);
  const filled = Math.round(used * 24);
  print(
    `\nBudget: [${'#'.repeat(filled)}${'.'.repeat(24 - filled)}] ${n(context.chars)} of ${n(budget.maxChars)} chars` +
      ` (${Math.round((context.chars / budget.maxChars) * 100)}%) — ${context.full} full, ${context.compacted} compacted, ${context.dropped} dropped`,
  );
  const last = rows.findLast((row) => row.input_tokens !== null && row.request_chars !== null);
  if (last && last.input_tokens) {
    const ratio = last.request_chars! / last.input_tokens;
    print(
      `Last request: ${n(last.request_chars!)} chars (system prompt and tools included) → ${n(last.input_tokens)} input tokens, ` +
        `${ratio.toFixed(1)} chars per token (message #${last.id}).`,
    );
  }
  print(
    dim('The system prompt and the tool definitions are added on top, fresh with every request.'),
  );
  print('\nMessages sent with the next question:');
  for (const message of context.messages) print(`  ${describeMessage(message)}`);
  return lines;
}

/** The whole stored conversation as one object: for a customer's data request or a bug report. */
export function exportConversation(
  conversation: ConversationSummary & { customer_name: string },
  rows: FullRow[],
  history: History,
) {
  const damaged = new Map(history.damaged.map((d) => [d.id, d.reason]));
  return {
    id: conversation.id,
    customer: { name: conversation.customer_name, email: conversation.customer_email },
    created_at: conversation.created_at,
    updated_at: conversation.updated_at,
    messages: rows.map((row) => ({
      id: row.id,
      role: row.role,
      created_at: row.created_at,
      data: parseIfText(row.data),
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      request_chars: row.request_chars,
      storage_note: row.storage_note,
      ...(damaged.has(row.id) ? { damaged: damaged.get(row.id) } : {}),
    })),
  };
}

/** The driver gives a JSON column as text on some servers and versions: parse it when it is valid JSON. */
function parseIfText(data: unknown): unknown {
  if (typeof data !== 'string') return data;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/** One line per message: `user: …`, `assistant: (requested tools) …`, `tool: name → {json}`, made safe for a terminal. */
export function describeMessage(message: Message): string {
  // Every field comes from a customer, a model or a stored row: the tool's name too.
  if (message.role === 'tool')
    return `tool: ${safe(message.name)} → ${safe(oneLine(shorten(message.content, 120)))}`;
  if (message.role !== 'assistant') return `${message.role}: ${safe(oneLine(message.content))}`;
  const by = message.provider_raw ? ` [${message.provider_raw.provider}]` : '';
  const calls = message.tool_calls
    ?.map((call) => `${call.name}(${JSON.stringify(call.arguments)})`)
    .join(', ');
  const text = message.content ? ` ${message.content}` : '';
  return calls
    ? `assistant${by}: (requested tools) ${safe(oneLine(calls + text))}`
    : `assistant${by}:${safe(oneLine(text))}`;
}

/** Text from a customer, a model or a stored row, on one line, with nothing a terminal would obey or hide. */
function safe(text: string): string {
  return printable(text, { singleLine: true });
}

function n(value: number): string {
  return value.toLocaleString('en-US');
}

function count(value: number, noun: string): string {
  return `${n(value)} ${noun}${value === 1 ? '' : 's'}`;
}

function when(date: Date): string {
  return date.toISOString().slice(0, 16).replace('T', ' ');
}
