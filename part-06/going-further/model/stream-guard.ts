// What reading a streamed reply needs beyond the SDKs: its options, an answer kept within its bound as it is shown, noticing a stream that stops sending, and telling a reply that broke off from one that was cancelled.
import { ProviderError, capitalized } from '../../../shared/llm/errors.ts';
import type { ChatOptions } from '../../../shared/llm/messages.ts';
import { ANSWER_CUT_MARKER, MAX_ANSWER_CHARS } from '../../../shared/llm/reply-limits.ts';

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

interface StreamGuard {
  /** The signal to give the SDK: aborted by the caller (Ctrl-C), by the deadline, or by us when the stream stalls. */
  signal: AbortSignal;
  /**
   * The stream's chunks, watched: the stall countdown starts again at each one, and a stall ends them.
   * Once they end, or the reader leaves the loop, the connection is closed.
   */
  chunks<T>(stream: AsyncIterable<T>): AsyncGenerator<T>;
  /**
   * The reply is complete but for a last chunk that may follow (OpenAI's usage): the chunks end within
   * `ms` (or the stall limit, if shorter) whatever else arrives, quietly, as after a stall.
   */
  endsWithin(ms: number): void;
  /** Why the chunks ended before the reply was complete: the stream stalled, never began, or was closed early. */
  incomplete(): ProviderError;
}

/**
 * Guards one attempt's stream. `signal` is the attempt's own (Ctrl-C and the deadline, from withRetries).
 * `readError` turns a failure while reading into what the attempt should throw: the provider's own error
 * (an error sent inside the stream), or `brokeOff` for a connection that dropped.
 */
export function guardStream(
  signal: AbortSignal,
  stallMs: number,
  provider: string,
  readError: (error: unknown) => unknown,
): StreamGuard {
  const stall = new AbortController();
  // Aborted once the chunks end: both SDKs read on until the server closes the connection, which a
  // server may never do (the Gemini SDK does not even close it when its reader leaves).
  const done = new AbortController();
  let received = 0;
  let timer: NodeJS.Timeout | undefined;
  let ending: NodeJS.Timeout | undefined;
  return {
    signal: AbortSignal.any([signal, stall.signal, done.signal]),
    async *chunks(stream) {
      // Started by the first chunk, not before: a reasoning model may think in silence for minutes before
      // it writes anything, and the deadline bounds that wait. Between chunks, silence means trouble.
      try {
        for await (const chunk of stream) {
          received++;
          clearTimeout(timer);
          timer = setTimeout(() => stall.abort(), stallMs);
          yield chunk;
        }
      } catch (error) {
        // Ctrl-C or the deadline: withRetries knows which and says so.
        if (signal.aborted) throw error;
        // A stall ends the chunks quietly: whether the reply was complete by then is the reader's to say
        // (incomplete() says why not). After endsWithin it was.
        if (!stall.signal.aborted) throw readError(error);
      } finally {
        clearTimeout(timer);
        clearTimeout(ending);
        done.abort();
      }
    },
    endsWithin(ms) {
      ending ??= setTimeout(() => stall.abort(), Math.min(ms, stallMs));
    },
    incomplete() {
      if (stall.signal.aborted) return stalled(provider, stallMs);
      return received ? endedEarly(provider) : notAStream(provider);
    },
  };
}

/**
 * A stream that began well and then failed: the connection dropped (fetch reports it as a TypeError whose
 * cause says why), or what arrived could not be read as chunks.
 */
export function brokeOff(provider: string, error: unknown): ProviderError {
  const Provider = capitalized(provider);
  if (error instanceof TypeError && error.cause !== undefined) {
    const cause = error.cause as { code?: string; message?: string };
    return new ProviderError({
      provider,
      kind: 'connection',
      message: `${Provider}'s reply broke off: the connection dropped (${cause.code ?? cause.message}).`,
      cause: error,
    });
  }
  return new ProviderError({
    provider,
    kind: 'bad_response',
    message: `${Provider}'s streamed reply could not be read (${(error as Error)?.message}).`,
    cause: error,
  });
}

/** The stream ended cleanly, but before the chunk that says the reply is complete. */
function endedEarly(provider: string): ProviderError {
  return new ProviderError({
    provider,
    kind: 'connection',
    message: `${capitalized(provider)}'s reply broke off: the stream ended before the reply was complete.`,
  });
}

/**
 * Not one chunk: the openai SDK finds no events in a body that is not a stream (a server or proxy that
 * ignores `stream: true` and sends the whole reply as JSON) and just ends. Asking again will not help.
 */
function notAStream(provider: string): ProviderError {
  return new ProviderError({
    provider,
    kind: 'bad_response',
    message: `${capitalized(provider)} answered, but not with a stream: not one chunk arrived. It may not support streaming.`,
  });
}

function stalled(provider: string, stallMs: number): ProviderError {
  return new ProviderError({
    provider,
    kind: 'timeout',
    message: `${capitalized(provider)} stopped sending in the middle of its reply: nothing arrived for ${stallMs / 1000} s.`,
  });
}
