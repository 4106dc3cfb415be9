// The full Nimbus's model call: like chatWithTools (shared/llm), but the answer's text is handed out as the model writes it.
import type { LlmSettings } from '../../../shared/config.ts';
import { ProviderError } from '../../../shared/llm/errors.ts';
import type {
  ChatOptions,
  ChatResult,
  Message,
  ToolDefinition,
} from '../../../shared/llm/messages.ts';
import { ANSWER_CUT_MARKER, MAX_ANSWER_CHARS } from '../../../shared/llm/reply-limits.ts';
import { withRetries } from '../../../shared/llm/retry.ts';
import { openaiProviderName } from '../../../shared/llm/openai-name.ts';

export interface StreamOptions extends ChatOptions {
  /**
   * Called with each new piece of the answer's text as it arrives (never the model's thought summaries).
   * The pieces join to the result's `text`. Once a piece has been handed out, a failure is not retried:
   * a retry would show the same text twice.
   */
  onText(text: string): void;
  /**
   * The longest silence allowed between two chunks once the reply has begun, in milliseconds (default
   * 30 000); a stream that stalls longer fails with kind 'timeout'. The wait for the first chunk is not
   * counted: a reasoning model may think in silence for longer than that, and LLM_TIMEOUT_SECONDS bounds it.
   */
  stallMs?: number;
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

/**
 * For a streamed answer: returns a function that takes each piece as it arrives and returns what to keep
 * of it, and shows what the reader may see. Up to the limit, everything; the piece that crosses it is
 * shown up to the limit, followed by the marker; after it, nothing is kept or shown. What is kept joins to
 * at most MAX_ANSWER_CHARS + 1 characters, which boundedAnswer turns into exactly what was shown.
 */
export function answerPieces(show: (text: string) => void): (piece: string) => string {
  let kept = 0;
  return (piece) => {
    if (kept > MAX_ANSWER_CHARS) return '';
    const keep = piece.slice(0, MAX_ANSWER_CHARS + 1 - kept);
    kept += keep.length;
    if (kept <= MAX_ANSWER_CHARS) {
      if (keep) show(keep);
    } else {
      // The one character past the limit is kept, not shown: it tells boundedAnswer the text was cut.
      show(keep.slice(0, -1) + ANSWER_CUT_MARKER);
    }
    return keep;
  };
}
