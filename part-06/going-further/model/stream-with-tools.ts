// The full Nimbus's model call: like chatWithTools (shared/llm), but the answer's text is handed out as the model writes it.
import type { LlmSettings } from '../../../shared/config.ts';
import { ProviderError } from '../../../shared/llm/errors.ts';
import type { ChatResult, Message, ToolDefinition } from '../../../shared/llm/messages.ts';
import { withRetries } from '../../../shared/llm/retry.ts';
import type { StreamOptions } from './stream-guard.ts';
import { openaiProviderName } from '../../../shared/llm/openai-name.ts';

/** How long a stream may go silent between two chunks before it counts as stalled (StreamOptions.stallMs). */
const DEFAULT_STALL_MS = 30_000;

/**
 * Like chatWithTools, but the answer's text is handed to `options.onText` piece by piece as the model
 * writes it, so the user reads while the rest arrives. It resolves with the same ChatResult, tool calls
 * and provider_raw included, so the agent loop, saving and replay do not change. A reply that breaks off
 * is a ProviderError like any other, and LLM_TIMEOUT_SECONDS covers the whole stream.
 */
export type { StreamOptions };

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
      import('../../../shared/llm/gemini.ts'),
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
    import('../../../shared/llm/openai.ts'),
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
