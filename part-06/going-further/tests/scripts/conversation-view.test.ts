// What show-conversation and the damaged-row warning print: every field from a customer, a model or a stored row is shown, never obeyed or hidden.
import { describe, expect, it } from 'vitest';
import { turnsView } from '../../store/message-rows.ts';
import { listView } from '../../store/recent-conversations.ts';
import type { StoredMessageRow } from '../../store/message-rows.ts';
import { describeDamage, shownMessages } from '../../store/read-history.ts';

/** Escape sequences, bidirectional overrides and invisible characters, raw. */
const HIDDEN = /[\x1b\u009b\u200b\u200d\u202e]/;
const when = new Date('2025-01-02T03:04:00Z');
const conversation = {
  id: 'a'.repeat(32),
  customer_id: 9,
  customer_email: 'eve@exa\u200bmple.com',
  customer_name: 'Eve\u202eevil',
  created_at: when,
  updated_at: when,
  messages: 2,
};

function row(seq: number, role: string, data: unknown): StoredMessageRow {
  return {
    seq,
    role,
    data: JSON.stringify(data),
    created_at: when,
    input_tokens: null,
    output_tokens: null,
    storage_note: null,
  };
}

describe('the views', () => {
  it('show the customer’s name and email escaped, in the list and in a conversation', () => {
    const list = listView([{ ...conversation, first_question: 'Where\u2060 is it?' }]).join('\n');
    expect(list).not.toMatch(HIDDEN);
    expect(list).toContain('eve@exa\\u200bmple.com');
    expect(list).toContain('Where\\u2060 is it?');

    const rows = [
      row(1, 'user', { role: 'user', content: 'Hi' }),
      row(2, 'assistant', { role: 'assistant', content: 'Hello!' }),
      // A hand-edited row, left out: the reason quotes its role, which must not reorder the line.
      row(3, 'tool', { role: 'tool\u202e', content: 'x' }),
    ];
    const shown = turnsView(conversation, shownMessages(rows)).join('\n');
    expect(shown).not.toMatch(HIDDEN);
    expect(shown.split('\n')[0]).toMatch(
      /^Conversation a{32} of Eve\\u202eevil \(eve@exa\\u200bmple\.com\): /,
    );
    expect(shown).toContain('[left out: unknown role "tool\\u202e"]');
  });
});

describe('describeDamage', () => {
  it('quotes the reason a stored row was left out escaped', () => {
    expect(
      describeDamage('a'.repeat(32), [{ seq: 7, reason: 'unknown role "tool\u202e\u200b"' }]),
    ).toBe(
      `warning: conversation ${'a'.repeat(32)}: left out damaged messages #7 (unknown role "tool\\u202e\\u200b")`,
    );
  });
});
