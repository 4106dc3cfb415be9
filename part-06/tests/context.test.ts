// Turn-preserving context: hand-made edge cases, then hundreds of random conversations against a reference.
import { describe, expect, it } from 'vitest';
import type { Message } from '../../shared/llm/index.ts';
import {
  buildContext as buildContextWith,
  closeTurn,
  compactTurn,
  DEFAULT_BUDGET as budget,
  interruptedAnswer,
  splitIntoTurns,
  turnChars,
  type Context,
} from '../context.ts';
import { randomConversation } from './random-conversations.ts';

const { maxChars: MEMORY_MAX_CHARS, recentTurns: MEMORY_RECENT_TURNS } = budget;
const buildContext = (messages: Message[]) => buildContextWith(messages, budget);

/** What the budget measures, written out plainly: the JSON of the list of turns, brackets included. */
const measure = (turns: Message[][]) => JSON.stringify(turns).length;

/** How many turns met each fate. */
function fates(context: Context) {
  const count = (fate: string) => context.turns.filter((t) => t.fate === fate).length;
  return { full: count('full'), compacted: count('compacted'), dropped: count('dropped') };
}

const user = (content: string): Message => ({ role: 'user', content });
const answer = (content: string): Message => ({
  role: 'assistant',
  content,
  provider_raw: { provider: 'gemini', message: { parts: [{ text: content }] } },
});
const call = (id: string): Message => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ id, name: 'get_order_status', arguments: { order_id: 1043 } }],
  provider_raw: { provider: 'openai', message: { tool_calls: [id] } },
});
const result = (id: string): Message => ({
  role: 'tool',
  tool_call_id: id,
  name: 'get_order_status',
  content: '{"status":"delivered"}',
});
const turn = (n: number, size = 10): Message[] => [
  user(`question ${n} ${'q'.repeat(size)}`),
  call(`c${n}`),
  result(`c${n}`),
  answer(`answer ${n}`),
];

describe('splitIntoTurns', () => {
  it('starts a turn at each user message', () => {
    expect(splitIntoTurns([...turn(1), ...turn(2)])).toEqual([turn(1), turn(2)]);
  });

  it('puts messages before the first user message in a turn of their own', () => {
    const greeting = answer('Hi!');
    expect(splitIntoTurns([greeting, ...turn(1)])).toEqual([[greeting], turn(1)]);
  });

  it('returns no turns for no messages', () => {
    expect(splitIntoTurns([])).toEqual([]);
  });
});

describe('compactTurn', () => {
  it('keeps the question and the last answer with text, as plain messages', () => {
    const t = [
      user('q'),
      answer('first thoughts'),
      call('c1'),
      result('c1'),
      answer('final'),
      { role: 'assistant', content: '  ' } as Message,
    ];
    expect(compactTurn(t)).toEqual([user('q'), { role: 'assistant', content: 'final' }]);
  });

  it('keeps just the question when there is no answer', () => {
    expect(compactTurn([user('q'), call('c1'), result('c1')])).toEqual([user('q')]);
  });

  it('keeps just the answer of a turn without a question', () => {
    expect(compactTurn([answer('Welcome')])).toEqual([{ role: 'assistant', content: 'Welcome' }]);
  });
});

describe('buildContext', () => {
  it('handles an empty history: nothing sent, and the measure of an empty list', () => {
    expect(buildContext([])).toEqual({ messages: [], budget, chars: 2, turns: [] });
    expect(measure([])).toBe(2); // "[]"
  });

  it('keeps a single turn whole', () => {
    const context = buildContext(turn(1));
    expect(context.messages).toEqual(turn(1));
    expect(fates(context)).toEqual({ full: 1, compacted: 0, dropped: 0 });
  });

  it('closes a turn cut short after its question, so no question follows a question', () => {
    const context = buildContext([user('Where is 1042?'), ...turn(2)]);
    const note: Message = {
      role: 'assistant',
      content: interruptedAnswer([user('Where is 1042?')]),
    };
    expect(note.content).toBe('(This answer was interrupted. Done before that: nothing.)');
    expect(context.messages.slice(0, 2)).toEqual([user('Where is 1042?'), note]);
    // The note is sent, never stored: the turn and its stored size are what the table holds.
    expect(context.turns[0]).toMatchObject({
      turn: [user('Where is 1042?')],
      sent: [user('Where is 1042?'), note],
      storedChars: turnChars([user('Where is 1042?')]),
      sentChars: turnChars([user('Where is 1042?'), note]),
    });
    expect(context.chars).toBe(JSON.stringify([[user('Where is 1042?'), note], turn(2)]).length);
  });

  it('closes a turn cut short after its tool results with a note naming them, the newest turn too', () => {
    const cut = [user('Where is 1043?'), call('c1'), result('c1')];
    const context = buildContext(cut);
    expect(context.messages).toEqual([
      ...cut,
      {
        role: 'assistant',
        content:
          '(This answer was interrupted. Done before that: get_order_status → {"status":"delivered"}.)',
      },
    ]);
    expect(context.turns[0]).toMatchObject({ fate: 'full', sent: context.messages });
    expect(context.chars).toBe(JSON.stringify([context.messages]).length);
    // A turn that ends with its answer is left as it is.
    expect(closeTurn(turn(1))).toEqual(turn(1));
  });

  it('keeps the last two turns whole and compacts the ones before', () => {
    const context = buildContext([...turn(1), ...turn(2), ...turn(3)]);
    expect(context.messages).toEqual([
      user(turn(1)[0].content as string),
      { role: 'assistant', content: 'answer 1' },
      ...turn(2),
      ...turn(3),
    ]);
    expect(fates(context)).toEqual({ full: 2, compacted: 1, dropped: 0 });
    expect(context.chars).toBe(measure(splitIntoTurns(context.messages)));
  });

  it('keeps a turn larger than the budget when it is the only one left', () => {
    const huge = turn(2, MEMORY_MAX_CHARS * 2);
    const context = buildContext([...turn(1), ...huge]);
    expect(context.messages).toEqual(huge);
    expect(fates(context)).toMatchObject({ full: 1, dropped: 1 });
    expect(context.chars).toBeGreaterThan(MEMORY_MAX_CHARS);
  });

  it('keeps a history of exactly the budget, and drops the oldest turn at one character more', () => {
    const fill = (size: number) => [...turn(1), ...turn(2, size)];
    const base = measure(splitIntoTurns(fill(0)));
    const exact = fill(MEMORY_MAX_CHARS - base);
    expect(measure(splitIntoTurns(exact))).toBe(MEMORY_MAX_CHARS);
    expect(buildContext(exact).chars).toBe(MEMORY_MAX_CHARS);
    expect(fates(buildContext(exact))).toMatchObject({ full: 2, dropped: 0 });
    expect(fates(buildContext(fill(MEMORY_MAX_CHARS - base + 1)))).toMatchObject({
      full: 1,
      dropped: 1,
    });
  });
});

/** A turn that does not end with an answer (some text, no tool calls) gets the interrupted note. */
function closedPlainly(turn: Message[]): Message[] {
  const last = turn[turn.length - 1];
  const answered =
    last.role === 'assistant' &&
    !(last.tool_calls && last.tool_calls.length) &&
    last.content.trim() !== '';
  return answered ? turn : [...turn, { role: 'assistant', content: interruptedAnswer(turn) }];
}

/** The rules as written in the chapter, implemented the plain (quadratic) way. */
function reference(messages: Message[]): Message[] {
  const split: Message[][] = [];
  for (const m of messages) {
    if (m.role === 'user' || split.length === 0) split.push([m]);
    else split[split.length - 1].push(m);
  }
  const turns = split.map(closedPlainly);
  let shaped = turns.map((t, i) => {
    if (i >= turns.length - MEMORY_RECENT_TURNS) return t;
    const out: Message[] = t[0].role === 'user' ? [t[0]] : [];
    const answers = t.filter((m) => m.role === 'assistant' && m.content.trim() !== '');
    if (answers.length)
      out.push({ role: 'assistant', content: answers[answers.length - 1].content as string });
    return out;
  });
  while (measure(shaped) > MEMORY_MAX_CHARS && shaped.length > 1) shaped = shaped.slice(1);
  return shaped.flat();
}

describe('buildContext on 400 random conversations', () => {
  const seeds = Array.from({ length: 400 }, (_, i) => i + 1);

  it('matches the reference and keeps every invariant', () => {
    const seen = { compacted: 0, dropped: 0, overBudgetAlone: 0, leadingNonUser: 0, closed: 0 };
    for (const seed of seeds) {
      const messages = randomConversation(seed, { maxTurns: seed % 4 === 0 ? 120 : 25 });
      const context = buildContext(messages);
      expect(context.messages, `seed ${seed}`).toEqual(reference(messages));

      // No call without its result, no result without its call.
      const calls = new Set<string>();
      const results = new Set<string>();
      for (const m of context.messages) {
        if (m.role === 'assistant') m.tool_calls?.forEach((c) => calls.add(c.id));
        if (m.role === 'tool') results.add(m.tool_call_id);
      }
      expect([...calls].sort(), `seed ${seed}`).toEqual([...results].sort());

      // The newest turns arrive verbatim (provider_raw and all), closed when they were cut short.
      const input = splitIntoTurns(messages);
      const output = splitIntoTurns(context.messages);
      const recent = Math.min(MEMORY_RECENT_TURNS, output.length);
      expect(output.slice(-recent), `seed ${seed}`).toEqual(input.slice(-recent).map(closeTurn));
      // No turn sent ends with a tool call or a tool result: a turn cut short was closed.
      for (const t of context.turns.filter((t) => t.fate === 'full')) {
        const last = t.sent.at(-1)!;
        expect(last.role === 'assistant' && !last.tool_calls?.length, `seed ${seed}`).toBe(true);
      }

      // Within budget, unless a single turn is all that is left; and the size is exactly the JSON
      // of the turns sent, brackets included.
      const sentTurns = context.turns.filter((t) => t.fate !== 'dropped').map((t) => t.sent);
      expect(context.chars).toBe(JSON.stringify(sentTurns).length);
      expect(context.chars).toBe(JSON.stringify(output).length);
      if (output.length > 1)
        expect(context.chars, `seed ${seed}`).toBeLessThanOrEqual(MEMORY_MAX_CHARS);
      const { full, compacted, dropped } = fates(context);
      expect(full + compacted + dropped).toBe(input.length);

      if (compacted) seen.compacted++;
      if (dropped) seen.dropped++;
      if (context.chars > MEMORY_MAX_CHARS) seen.overBudgetAlone++;
      if (messages[0].role !== 'user') seen.leadingNonUser++;
      if (input.some((t) => t !== closeTurn(t))) seen.closed++;
    }
    // The random corpus really exercises every rule (otherwise the checks above prove little).
    expect(seen.compacted).toBeGreaterThan(100);
    expect(seen.dropped).toBeGreaterThan(50);
    expect(seen.overBudgetAlone).toBeGreaterThan(5);
    expect(seen.leadingNonUser).toBeGreaterThan(20);
    expect(seen.closed).toBeGreaterThan(100);
  });
});

describe('interruptedAnswer', () => {
  it('names what the tools of an interrupted turn returned, so compaction keeps it', () => {
    const ticket: Message = {
      role: 'tool',
      tool_call_id: 't1',
      name: 'create_support_ticket',
      content: '{"created":true,"ticket_id":5003,"status":"open"}',
    };
    const closed = [user('Refund 1042, please'), call('t1'), ticket];
    const note = interruptedAnswer(closed);
    expect(note).toBe(
      '(This answer was interrupted. Done before that: create_support_ticket → {"created":true,"ticket_id":5003,"status":"open"}.)',
    );
    // Two questions later the turn is compacted to question and answer: the ticket number is still there.
    const later = buildContext([...closed, answer(note), ...turn(2), ...turn(3)]);
    expect(later.turns[0].fate).toBe('compacted');
    expect(JSON.stringify(later.turns[0].sent)).toContain('5003');
  });
});
