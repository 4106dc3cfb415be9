// Test helper: seeded random conversations in the neutral format, with every shape memory must handle.
import type { Message } from '../../shared/llm/index.ts';

/** mulberry32: a tiny seeded random generator, so a failing case can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = [
  'order',
  'refund',
  'shipped',
  'window',
  'ticket',
  'päckchen',
  '返金',
  '🎧',
  "it's",
  '"quoted"',
  'DROP TABLE x;',
  'help',
];

export interface RandomOptions {
  maxTurns?: number;
  /** Chance that a message is huge (bigger than the whole memory budget). */
  hugeChance?: number;
}

export function randomConversation(seed: number, options: RandomOptions = {}): Message[] {
  const random = seededRandom(seed);
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)];
  const text = (maxWords: number) => {
    if (random() < (options.hugeChance ?? 0.02))
      return 'x'.repeat(13_000 + Math.floor(random() * 4000));
    return Array.from({ length: 1 + Math.floor(random() * maxWords) }, () => pick(WORDS)).join(' ');
  };
  const messages: Message[] = [];
  let callNumber = 0;

  // Sometimes the history starts with something other than a user message (e.g. a greeting).
  if (random() < 0.15) messages.push({ role: 'assistant', content: `Welcome! ${text(5)}` });

  const turns = 1 + Math.floor(random() * (options.maxTurns ?? 30));
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `${t}: ${text(12)}` });
    const steps = Math.floor(random() * 3); // 0–2 tool steps
    for (let s = 0; s < steps; s++) {
      const provider = random() < 0.5 ? 'gemini' : 'openai';
      const calls = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
        id: `call_${seed}_${++callNumber}`,
        name: pick(['get_order_status', 'check_refund_eligibility', 'search_help_center']),
        arguments: { order_id: 1000 + Math.floor(random() * 50) },
      }));
      messages.push({
        role: 'assistant',
        content: random() < 0.2 ? text(4) : '',
        tool_calls: calls,
        provider_raw: {
          provider,
          message: {
            role: 'model',
            parts: calls.map((c) => ({ functionCall: { name: c.name, args: c.arguments } })),
            note: text(6),
          },
        },
      });
      for (const call of calls) {
        messages.push({
          role: 'tool',
          tool_call_id: call.id,
          name: call.name,
          content: JSON.stringify({ status: text(3) }),
        });
      }
    }
    // Most turns end with an answer; some do not (an answer that never came, or an empty one).
    const ending = random();
    if (ending < 0.8)
      messages.push({
        role: 'assistant',
        content: text(20),
        provider_raw: { provider: 'openai', message: { role: 'assistant', content: 'raw' } },
      });
    else if (ending < 0.9) messages.push({ role: 'assistant', content: '' });
  }
  return messages;
}
