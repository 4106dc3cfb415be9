// What show-conversation prints, as lines: a conversation turn by turn, the next context turn by turn, and an export.
import { dim } from '../shared/cli.ts';
import type { Message } from '../shared/llm/index.ts';
import { oneLine, printable, shorten } from '../shared/text.ts';
import { splitIntoTurns, type Context } from './context.ts';
import type { ConversationSummary, StoredMessageRow } from './stored-conversations.ts';

/**
 * The stored rows read back as messages: each message with its row's seq (undefined for a note added
 * when the answer never came), and the rows left out as damaged, with why.
 */
export interface ReadHistory {
  messages: Message[];
  seqs: Array<number | undefined>;
  damaged: Array<{ seq: number; reason: string }>;
}

/** What the [gemini] and [openai] tags mean, printed once under every view that shows them. */
const TAG_LEGEND =
  '[gemini]/[openai]: the provider that wrote the message; its own version is kept and replayed to it.';

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
  conversation: ConversationSummary,
  rows: StoredMessageRow[],
  history: ReadHistory,
): string[] {
  const lines = [
    `Conversation ${conversation.id} of ${safe(conversation.customer_name)} (${safe(conversation.customer_email)}): ` +
      `${count(rows.length, 'message')} in ${count(splitIntoTurns(history.messages).length, 'turn')}, ` +
      `started ${when(conversation.created_at)}, last updated ${when(conversation.updated_at)}`,
  ];
  const bySeq = new Map(rows.map((row) => [row.seq, row]));
  const damaged = new Map(history.damaged.map((d) => [d.seq, d.reason]));
  const total = new Tally();
  let turn = new Tally();
  let turnNumber = 0;
  // Rows and kept messages are both in seq order: one cursor walks the rows, showing the damaged ones in place.
  let cursor = 0;
  const showDamagedBefore = (seq: number) => {
    for (; cursor < rows.length && rows[cursor].seq < seq; cursor++) {
      const { seq: at, role, data } = rows[cursor];
      const reason = damaged.get(at);
      if (reason)
        lines.push(
          `  #${at} [left out: ${safe(reason)}] ${safe(role)}: ${safe(shorten(data, 120))}`,
        );
    }
  };

  history.messages.forEach((message, i) => {
    const seq = history.seqs[i];
    if (seq !== undefined) showDamagedBefore(seq);
    if (message.role === 'user' || turnNumber === 0) {
      if (turn.calls) lines.push(dim(`    ${turn}`));
      turn = new Tally();
      lines.push(`Turn ${++turnNumber}`);
    }
    if (seq === undefined) {
      const why = 'added when sent, because the answer never came';
      return void lines.push(dim(`  (not stored) ${describeMessage(message)} — ${why}`));
    }
    const row = bySeq.get(seq)!;
    const note = row.storage_note ? dim(` [stored with changes: ${safe(row.storage_note)}]`) : '';
    lines.push(`  #${seq} ${describeMessage(message)}${note}`);
    turn.add(row);
    total.add(row);
  });
  showDamagedBefore(Number.MAX_SAFE_INTEGER);
  if (turn.calls) lines.push(dim(`    ${turn}`));
  lines.push(`Tokens: ${total.tokens} over ${count(total.calls, 'model call')}.`, dim(TAG_LEGEND));
  return lines;
}

/** The tokens of the model calls that wrote some rows (each assistant row records its call's). */
class Tally {
  input = 0;
  output = 0;
  calls = 0;

  add(row: StoredMessageRow): void {
    if (row.input_tokens === null) return;
    this.input += row.input_tokens;
    this.output += row.output_tokens ?? 0;
    this.calls++;
  }

  get tokens(): string {
    return `${n(this.input)} input + ${n(this.output)} output`;
  }

  toString(): string {
    return `${count(this.calls, 'model call')}: ${this.tokens} tokens`;
  }
}

/** The turn-by-turn view of buildContext: each turn's fate and size, the budget, then the exact messages. */
export function contextView(id: string, context: Context, rows: StoredMessageRow[]): string[] {
  const lines: string[] = [];
  const print = (line: string) => lines.push(line);
  const { budget } = context;
  print(`Context for the next question in conversation ${id}`);
  print(
    `(budget ${n(budget.maxChars)} chars, the last ${count(budget.recentTurns, 'turn')} full):\n`,
  );
  print('  turn  fate         stored     sent    total  question');
  let total = 0;
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
  const fates = (['full', 'compacted', 'dropped'] as const).map(
    (fate) => `${context.turns.filter((t) => t.fate === fate).length} ${fate}`,
  );
  print(
    `\nBudget: [${'#'.repeat(filled)}${'.'.repeat(24 - filled)}] ${n(context.chars)} of ${n(budget.maxChars)} chars` +
      ` (${Math.round((context.chars / budget.maxChars) * 100)}%) — ${fates.join(', ')}`,
  );
  if (context.chars > budget.maxChars) {
    print('Over budget: the newest turn is always kept, whatever its size.');
  }
  print(dim('Sizes are the JSON characters of each turn, plus one for the comma after it.'));
  const last = rows.findLast((row) => row.input_tokens !== null && row.request_chars !== null);
  if (last && last.input_tokens) {
    const ratio = last.request_chars! / last.input_tokens;
    print(
      `Last request: ${n(last.request_chars!)} chars (system prompt and tools included) → ${n(last.input_tokens)} input tokens, ` +
        `${ratio.toFixed(1)} chars per token (message #${last.seq}).`,
    );
  }
  print(
    dim('The system prompt and the tool definitions are added on top, fresh with every request.'),
  );
  print('\nMessages sent with the next question:');
  for (const message of context.messages) print(`  ${describeMessage(message)}`);
  print(dim(TAG_LEGEND));
  return lines;
}

/** The whole stored conversation as one object: for a customer's data request or a bug report. */
export function exportConversation(
  conversation: ConversationSummary,
  rows: StoredMessageRow[],
  history: ReadHistory,
) {
  const damaged = new Map(history.damaged.map((d) => [d.seq, d.reason]));
  return {
    id: conversation.id,
    customer: { name: conversation.customer_name, email: conversation.customer_email },
    created_at: conversation.created_at,
    updated_at: conversation.updated_at,
    messages: rows.map((row) => ({
      seq: row.seq,
      role: row.role,
      created_at: row.created_at,
      data: parseIfText(row.data),
      input_tokens: row.input_tokens,
      output_tokens: row.output_tokens,
      request_chars: row.request_chars,
      storage_note: row.storage_note,
      ...(damaged.has(row.seq) ? { damaged: damaged.get(row.seq) } : {}),
    })),
  };
}

/** The stored text, parsed when it is JSON that JavaScript reads; as text otherwise (a damaged row). */
function parseIfText(data: string): unknown {
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
