// Token counts from the provider are checked where they are read: numbers that are no counts come back as unknown, for both providers, whole or streamed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatWithTools, type Message } from '../../../../shared/llm/index.ts';
import { streamWithTools } from '../../model/stream-with-tools.ts';
import { MAX_TOKENS_PER_CALL } from '../../../../shared/llm/usage.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());

const question: Message[] = [{ role: 'user', content: 'Where is order 1043?' }];

describe.each(['gemini', 'openai'] as const)('usage from %s', (provider) => {
  const ask = (streamed: boolean) =>
    streamed
      ? streamWithTools(fake.llm(provider), question, [], { onText: () => {} })
      : chatWithTools(fake.llm(provider), question);

  it.each([false, true])('keeps counts that are counts (streamed: %s)', async (streamed) => {
    fake.reply({ text: 'Shipped.', usage: { input: 12, output: 0 } });
    expect((await ask(streamed)).usage).toEqual({ input_tokens: 12, output_tokens: 0 });
  });

  it.each([
    ['negative', { input: -5, output: 3 }],
    ['negative output', { input: 5, output: -3 }],
    ['fractional', { input: 12.5, output: 3 }],
    ['absurd', { input: MAX_TOKENS_PER_CALL + 1, output: 3 }],
    ['text', { input: '12' as unknown as number, output: 3 }],
  ])('reads %s counts as unknown, whole and streamed', async (_, usage) => {
    for (const streamed of [false, true]) {
      fake.reply({ text: 'Shipped.', usage });
      const result = await ask(streamed);
      expect(result.text).toBe('Shipped.');
      expect(result.usage).toBeUndefined();
    }
  });

  it('has no usage when the server sends none', async () => {
    for (const streamed of [false, true]) {
      fake.reply({ text: 'Shipped.', usage: 'none' });
      expect((await ask(streamed)).usage).toBeUndefined();
    }
  });
});
