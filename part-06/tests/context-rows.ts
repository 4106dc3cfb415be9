// Test helper: conversations to inspect, and the viewer's --context rows, read back and computed with buildContext itself.
import type { Message } from '../../shared/llm/index.ts';
import { buildContext, type MemoryBudget } from '../context.ts';
import { newConversation, saveMessages, type MessageToSave } from '../memory.ts';

/** A turn of a question, one tool step and an answer, `size` characters of question; each model call reports tokens. */
export function turn(n: number, size = 40): MessageToSave[] {
  const id = `call_${n}`;
  return [
    { message: { role: 'user', content: `Question ${n} ${'q'.repeat(size)}` } },
    {
      message: {
        role: 'assistant',
        content: '',
        tool_calls: [{ id, name: 'get_order_status', arguments: { order_id: 1042 } }],
      },
      cost: { input_tokens: 1000 + n, output_tokens: 10 },
    },
    {
      message: {
        role: 'tool',
        tool_call_id: id,
        name: 'get_order_status',
        content: '{"status":"shipped"}',
      },
    },
    {
      message: { role: 'assistant', content: `Answer ${n}.` },
      cost: { input_tokens: 1100 + n, output_tokens: 20 },
    },
  ];
}
export async function conversation(...steps: MessageToSave[][]): Promise<string> {
  const c = newConversation(1);
  for (const step of steps) await saveMessages(c, step);
  return c.id;
}
/** The table rows of `--context`: turn number, fate, stored, sent, total (undefined when dropped). */
export function rowsOf(stdout: string) {
  return [
    ...stdout.matchAll(
      /^ +(\d+) {2}(full|compacted|dropped) +([\d,]+) +([\d,]+) +([\d,—]+) {2}(.*)$/gm,
    ),
  ].map((m) => ({
    turn: Number(m[1]),
    fate: m[2],
    stored: Number(m[3].replace(/,/g, '')),
    sent: Number(m[4].replace(/,/g, '')),
    total: m[5] === '—' ? undefined : Number(m[5].replace(/,/g, '')),
    question: m[6],
  }));
}
/** What the view must say, computed with buildContext itself. */
export function expected(messages: Message[], budget: MemoryBudget) {
  const context = buildContext(messages, budget);
  let total = 1; // the brackets around the list of turns
  return {
    context,
    rows: context.turns.map((t, i) => {
      if (t.fate !== 'dropped') total += t.sentChars;
      return {
        turn: i + 1,
        fate: t.fate,
        stored: t.storedChars,
        sent: t.sentChars,
        total: t.fate === 'dropped' ? undefined : total,
      };
    }),
  };
}
