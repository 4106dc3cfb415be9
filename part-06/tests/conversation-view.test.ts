// What show-conversation and the damaged-row warning print: every field from a customer, a model or a stored row is shown, never obeyed or hidden.
import { describe, expect, it } from 'vitest';
import type { Message } from '../../shared/llm/index.ts';
import { describeMessage } from '../conversation-view.ts';

describe('describeMessage', () => {
  it.each<[string, Message, string]>([
    [
      'the name of a tool result',
      { role: 'tool', tool_call_id: 'c1', name: 'get_order\x1b[2J\u200b', content: '{}' },
      'tool: get_order\\x1b[2J\\u200b → {}',
    ],
    [
      'the name and arguments of a requested tool',
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'c1', name: 'look\u202eup', arguments: { q: 'a\u200db' } }],
      },
      'assistant: (requested tools) look\\u202eup({"q":"a\\u200db"})',
    ],
    ['a question', { role: 'user', content: 'Hi\u009b2J\nthere' }, 'user: Hi\\x9b2J there'],
  ])('shows %s escaped', (_, message, line) => {
    expect(describeMessage(message)).toBe(line);
  });
});
