// What show-conversation prints, as lines: one conversation turn by turn, and how its next context is built.
import { dim } from '../shared/cli.ts';
import type { Message } from '../shared/llm/index.ts';
import { minute, oneLine, plural, safeLine, shorten, thousands } from '../shared/text.ts';
import { splitIntoTurns, type Context } from './context.ts';
import type { ConversationSummary } from './stored-conversations.ts';

/** What the [gemini] and [openai] tags mean, printed once under every view that shows them. */
export const TAG_LEGEND =
  '[gemini]/[openai]: the provider that wrote the message; its own version is kept and replayed to it.';

/** Every stored message, turn by turn: what memory holds, before any of it is trimmed. */
export function storedView(conversation: ConversationSummary, messages: Message[]): string[] {
  const { id, customer_name: name, customer_email: email } = conversation;
  const turns = splitIntoTurns(messages);
  return [
    `Conversation ${id} of ${safeLine(name)} (${safeLine(email)}): ${plural(messages.length, 'message')} in ` +
      `${plural(turns.length, 'turn')}, started ${minute(conversation.created_at)}, last updated ${minute(conversation.updated_at)}`,
    ...turns.flatMap((turn, i) => [`Turn ${i + 1}`, ...turn.map((m) => `  ${describeMessage(m)}`)]),
    dim(TAG_LEGEND),
  ];
}

/** The turn-by-turn view of buildContext: each turn's fate and size, the budget, then the exact messages. */
export function contextView(id: string, context: Context): string[] {
  const { budget } = context;
  const lines = [
    `Context for the next question in conversation ${id}`,
    `(budget ${thousands(budget.maxChars)} chars, ${budget.recentTurns === 1 ? 'the newest turn' : `the last ${thousands(budget.recentTurns)} turns`} full):\n`,
    '  turn  fate         stored     sent    total  question',
  ];
  let total = 1; // the brackets around the list of turns
  context.turns.forEach((turn, i) => {
    total += turn.sentChars;
    const question =
      turn.turn[0]?.role === 'user' ? turn.turn[0].content : '(before the first question)';
    const line =
      `  ${String(i + 1).padStart(4)}  ${turn.fate.padEnd(10)} ${thousands(turn.storedChars).padStart(7)}  ${thousands(turn.sentChars).padStart(7)}  ` +
      `${(turn.fate === 'dropped' ? '—' : thousands(total)).padStart(7)}  ${safeLine(shorten(oneLine(question), 50))}`;
    lines.push(turn.fate === 'dropped' ? dim(line) : line);
  });
  const filled = Math.round(Math.min(1, context.chars / budget.maxChars) * 24);
  const fates = (['full', 'compacted', 'dropped'] as const).map(
    (fate) => `${context.turns.filter((t) => t.fate === fate).length} ${fate}`,
  );
  lines.push(
    `\nBudget: [${'#'.repeat(filled)}${'.'.repeat(24 - filled)}] ${thousands(context.chars)} of ${thousands(budget.maxChars)} chars` +
      ` (${Math.round((context.chars / budget.maxChars) * 100)}%) — ${fates.join(', ')}`,
    dim(
      "Sizes: each turn's JSON and its comma; the list's brackets add one. The newest turn is always kept.",
    ),
    dim('The system prompt and the tool definitions are added on top, fresh with every request.'),
    '\nMessages sent with the next question:',
    ...context.messages.map((message) => `  ${describeMessage(message)}`),
    dim(TAG_LEGEND),
  );
  return lines;
}

/** One line per message: `user: …`, `assistant: (requested tools) …`, `tool: name → {json}`, made safe for a terminal. */
export function describeMessage(message: Message): string {
  if (message.role === 'tool')
    return `tool: ${safeLine(message.name)} → ${safeLine(shorten(message.content, 120))}`;
  if (message.role !== 'assistant') return `${message.role}: ${safeLine(message.content)}`;
  const by = message.provider_raw ? ` [${message.provider_raw.provider}]` : '';
  const calls = message.tool_calls
    ?.map((call) => `${call.name}(${JSON.stringify(call.arguments)})`)
    .join(', ');
  const text = message.content ? ` ${message.content}` : '';
  return calls
    ? `assistant${by}: (requested tools) ${safeLine(calls + text)}`
    : `assistant${by}:${safeLine(text)}`;
}
