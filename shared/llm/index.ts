// The provider layer's front door: one call for chat, one for embeddings, for the provider the settings name.
import type { LlmSettings } from '../config.ts';
import { ProviderError } from './errors.ts';
import type {
  ChatOptions,
  ChatResult,
  Message,
  StreamOptions,
  ToolDefinition,
} from './messages.ts';
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

/** How long a stream may go silent between two chunks before it counts as stalled (StreamOptions.stallMs). */
const DEFAULT_STALL_MS = 30_000;

/**
 * Like chatWithTools, but the answer's text is handed to `options.onText` piece by piece as the model
 * writes it, so the user reads while the rest arrives. It resolves with the same ChatResult, tool calls
 * and provider_raw included, so the agent loop, saving and replay do not change. A reply that breaks off
 * is a ProviderError like any other, and LLM_TIMEOUT_SECONDS covers the whole stream.
 */
export async function streamWithTools(
  settings: LlmSettings,
  messages: Message[],
  tools: ToolDefinition[],
  options: StreamOptions,
): Promise<ChatResult> {
  let shown = false;
  const streamOptions = {
    stallMs: options.stallMs ?? DEFAULT_STALL_MS,
    onText: (text: string) => {
      shown = true;
      options.onText(text);
    },
  };
  // Retrying after text was shown would show it twice: from then on, a failure is final.
  const finalOnceShown = (error: ProviderError) => (shown ? notRetried(error) : error);
  if (settings.provider === 'gemini') {
    const [{ geminiError }, { geminiStream }] = await Promise.all([
      import('./gemini.ts'),
      import('./gemini-stream.ts'),
    ]);
    return withRetries(
      'Gemini',
      settings.timeoutMs,
      (signal) => geminiStream(settings, messages, tools, signal, streamOptions),
      (e) => finalOnceShown(geminiError(e, settings)),
      options,
    );
  }
  const [{ openaiError }, { openaiStream }] = await Promise.all([
    import('./openai.ts'),
    import('./openai-stream.ts'),
  ]);
  return withRetries(
    openaiProviderName(settings),
    settings.timeoutMs,
    (signal) => openaiStream(settings, messages, tools, signal, streamOptions),
    (e) => finalOnceShown(openaiError(e, settings)),
    options,
  );
}

function notRetried(error: ProviderError): ProviderError {
  if (!error.retryable) return error;
  return new ProviderError({
    provider: error.provider,
    kind: error.kind,
    status: error.status,
    message: `${error.message} (Part of the answer was already shown, so it was not retried.)`,
    retryable: false,
    cause: error,
  });
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
