// The provider layer's front door: one call for chat, one for embeddings, for the provider the settings name.
import type { LlmSettings } from '../config.ts';
import type { ChatOptions, ChatResult, Message, ToolDefinition } from './messages.ts';
import { withRetries } from './retry.ts';
import { openaiProviderName } from './openai-name.ts';

export * from './messages.ts';
export { ProviderError, type ProviderErrorKind } from './errors.ts';
export { describeRetry } from './retry.ts';

/**
 * Sends the conversation (and the tools the model may ask for) and returns the model's reply.
 * Every chapter uses this one call. Failures arrive as a ProviderError after our retry policy, and the
 * whole call, retries included, ends within LLM_TIMEOUT_SECONDS.
 */
export async function chatWithTools(
  settings: LlmSettings,
  messages: Message[],
  tools: ToolDefinition[] = [],
  options: ChatOptions = {},
): Promise<ChatResult> {
  // Each SDK takes a few hundred milliseconds to load, so only the one in use is imported.
  if (settings.provider === 'gemini') {
    const { geminiChat, geminiError } = await import('./gemini.ts');
    return withRetries(
      'Gemini',
      settings.timeoutMs,
      (signal) => geminiChat(settings, messages, tools, signal),
      (e) => geminiError(e, settings),
      options,
    );
  }
  const { openaiChat, openaiError } = await import('./openai.ts');
  return withRetries(
    openaiProviderName(settings),
    settings.timeoutMs,
    (signal) => openaiChat(settings, messages, tools, signal),
    (e) => openaiError(e, settings),
    options,
  );
}

/**
 * Turns texts into vectors. `task` matters to Gemini, which embeds questions and documents differently;
 * OpenAI ignores it.
 */
export async function embed(
  settings: LlmSettings,
  texts: string[],
  task: 'document' | 'query',
  options: ChatOptions = {},
): Promise<number[][]> {
  if (settings.provider === 'gemini') {
    const { geminiEmbed, geminiError } = await import('./gemini.ts');
    return withRetries(
      'Gemini',
      settings.timeoutMs,
      (signal) => geminiEmbed(settings, texts, task, signal),
      (e) => geminiError(e, settings),
      options,
    );
  }
  if (!settings.embeddingModel) {
    throw new Error('No embedding model is configured: set OPENAI_EMBEDDING_MODEL in .env.');
  }
  const { openaiEmbed, openaiError } = await import('./openai.ts');
  return withRetries(
    openaiProviderName(settings),
    settings.timeoutMs,
    (signal) => openaiEmbed(settings, texts, signal),
    (e) => openaiError(e, settings),
    options,
  );
}
