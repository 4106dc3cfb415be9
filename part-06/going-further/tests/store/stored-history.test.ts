// Reading stored rows defensively: damaged pieces are left out and named, the rest is kept in order.
import { describe, expect, it } from 'vitest';
import { interruptedAnswer } from '../../../context.ts';
import { readHistory, type StoredRow } from '../../store/read-history.ts';

/** A row as the store reads it: the JSON column as text. */
const row = (seq: number, data: unknown, role?: string): StoredRow => ({
  seq,
  role:
    role ??
    (typeof data === 'object' && data && 'role' in data
      ? String((data as { role: string }).role)
      : 'user'),
  data: JSON.stringify(data),
});
const user = (id: number, content = 'Hi') => row(id, { role: 'user', content });
const calls = (id: number, ...ids: string[]) =>
  row(id, {
    role: 'assistant',
    content: '',
    tool_calls: ids.map((c) => ({ id: c, name: 'get_order_status', arguments: { order_id: 1 } })),
  });
const result = (id: number, callId: string) =>
  row(id, { role: 'tool', tool_call_id: callId, name: 'get_order_status', content: '{}' });
const answer = (id: number) => row(id, { role: 'assistant', content: 'Done.' });

describe('readHistory', () => {
  it('keeps a healthy history unchanged', () => {
    const rows = [user(1), calls(2, 'a', 'b'), result(3, 'a'), result(4, 'b'), answer(5)];
    const history = readHistory(rows);
    expect(history.damaged).toEqual([]);
    expect(history.seqs).toEqual([1, 2, 3, 4, 5]);
    expect(history.messages).toEqual(rows.map((r) => JSON.parse(r.data)));
  });

  it('leaves out a tool call without its result, with the results it did get', () => {
    const history = readHistory([
      user(1),
      calls(2, 'a', 'b'),
      result(3, 'a'),
      answer(4),
      user(5),
      answer(6),
    ]);
    expect(history.seqs).toEqual([1, 4, 5, 6]);
    expect(history.damaged).toEqual([
      { seq: 2, reason: 'tool call without its result' },
      { seq: 3, reason: 'result of a tool call left out' },
    ]);
  });

  it('leaves out results without their call, including duplicates and results after a user message', () => {
    const history = readHistory([
      user(1),
      calls(2, 'a'),
      result(3, 'a'),
      result(4, 'a'),
      result(5, 'zzz'),
      answer(6),
      user(7),
      result(8, 'a'),
      answer(9),
    ]);
    expect(history.seqs).toEqual([1, 2, 3, 6, 7, 9]);
    expect(history.damaged.map((d) => [d.seq, d.reason])).toEqual([
      [4, 'tool result without its call'],
      [5, 'tool result without its call'],
      [8, 'tool result without its call'],
    ]);
  });

  it('closes a turn that stopped after its tool step (a crash before the answer) with a note, so every turn ends with an answer', () => {
    const history = readHistory([
      user(1),
      calls(2, 'a'),
      result(3, 'a'),
      user(4),
      answer(5),
      user(6),
      calls(7, 'b'),
      result(8, 'b'),
    ]);
    expect(history.damaged).toEqual([]);
    expect(history.seqs).toEqual([1, 2, 3, undefined, 4, 5, 6, 7, 8, undefined]);
    // The note names what the tools returned, as the one a cancelled turn is saved with.
    const note = (n: number) => interruptedAnswer(history.messages.slice(n, n + 3));
    expect(history.messages[3]).toEqual({ role: 'assistant', content: note(0) });
    expect(history.messages.at(-1)).toEqual({ role: 'assistant', content: note(6) });
    expect(note(0)).toContain('get_order_status → {}');
  });

  it('closes a question left without any answer too', () => {
    expect(readHistory([user(1), user(2), answer(3)]).seqs).toEqual([1, undefined, 2, 3]);
  });

  it('drops a provider_raw that disagrees with its neutral fields, keeping the message', () => {
    const raw = {
      provider: 'openai',
      message: {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'a', type: 'custom', custom: { name: 'x', input: '' } }],
      },
    };
    const history = readHistory([
      user(1),
      row(2, { role: 'assistant', content: 'Done.', provider_raw: raw }),
    ]);
    expect(history.messages[1]).toEqual({ role: 'assistant', content: 'Done.' });
    expect(history.damaged).toEqual([]);
  });

  it('leaves out invalid JSON, unknown roles and malformed messages', () => {
    const history = readHistory([
      user(1),
      { seq: 2, role: 'assistant', data: '{"role":"assistant","content":' },
      row(3, { role: 'function', content: 'x' }, 'tool'),
      row(4, { role: 'assistant', content: 'x' }, 'user'),
      row(5, { role: 'assistant', content: 42 }),
      row(6, {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'a', name: 'x', arguments: '{"not":"an object"}' }],
      }),
      row(7, [1, 2, 3], 'user'),
      answer(8),
      // MariaDB's JSON check accepts these; JavaScript's JSON.parse does not.
      { seq: 9, role: 'user', data: '{"role":"user","content":"C:\\xfer"}' },
      { seq: 10, role: 'assistant', data: '{"role":"assistant","content":"x","n":1.}' },
    ]);
    expect(history.seqs).toEqual([1, 8]);
    expect(history.damaged).toEqual([
      { seq: 2, reason: 'invalid JSON' },
      { seq: 3, reason: 'unknown role "function"' },
      { seq: 4, reason: 'role column "user" does not match the message\'s role "assistant"' },
      { seq: 5, reason: 'malformed assistant message' },
      { seq: 6, reason: 'malformed assistant message' },
      { seq: 7, reason: 'not a message object' },
      { seq: 9, reason: 'invalid JSON' },
      { seq: 10, reason: 'invalid JSON' },
    ]);
  });
});
