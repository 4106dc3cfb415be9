// Our retry policy, used instead of the SDKs' own: it honours the provider's wait hints and shows each wait.
import { setTimeout as sleepFor } from 'node:timers/promises';
import { dim } from '../cli.ts';
import { ProviderError, capitalized } from './errors.ts';
import type { ChatOptions, RetryInfo } from './messages.ts';

/** Retries after the first attempt. Four requests in all is plenty for a blip; more just hides an outage. */
const MAX_RETRIES = 3;
/** The longest wait we accept. A provider asking for more (an hourly limit, say) fails fast instead. */
const MAX_WAIT_MS = 60_000;
/** First backoff step when the provider gives no hint: 1 s, then 2 s, 4 s (each with jitter). */
const BASE_DELAY_MS = 1000;

/**
 * Runs `request` until it succeeds, retrying what is worth retrying. The whole call, every attempt and
 * every wait between them, ends by one deadline (LLM_TIMEOUT_SECONDS): a server that never answers
 * costs that long once, not once per attempt.
 */
export async function withRetries<T>(
  provider: string,
  timeoutMs: number,
  request: (signal: AbortSignal) => Promise<T>,
  toProviderError: (error: unknown) => ProviderError,
  options: ChatOptions = {},
): Promise<T> {
  const sleep = options.sleep ?? defaultSleep;
  const onRetry = options.onRetry ?? printRetry;
  const endsAt = Date.now() + timeoutMs;
  // A plain timer, cleared at the end: an AbortSignal.timeout may be collected, and then it never fires.
  const expired = new AbortController();
  const timer = setTimeout(() => expired.abort(), timeoutMs);
  const deadline = expired.signal;
  // Each attempt (and each wait) stops at whichever comes first: the caller's Ctrl-C or our deadline.
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  let lastError: ProviderError | undefined;
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        return await request(signal);
      } catch (thrown) {
        // Why the attempt ended is known here, not from what the SDK threw: the caller first, then the deadline.
        // (An attempt started after either fired fails at once, so a wait cut short ends up here too.)
        if (options.signal?.aborted) throw abortedError(provider, thrown);
        if (deadline.aborted) throw timeoutError(provider, timeoutMs, lastError);
        const error = toProviderError(thrown);
        if (!error.retryable || attempt > MAX_RETRIES) throw error;
        const waitMs = error.retryAfterMs ?? backoff(attempt);
        if (waitMs > MAX_WAIT_MS) {
          throw new ProviderError({
            provider,
            kind: error.kind,
            status: error.status,
            message: `${error.message} (${provider} asks us to wait ${Math.ceil(waitMs / 1000)} s, which is too long; try again later.)`,
            cause: error,
          });
        }
        // Sleeping past the deadline only to fail then would make the user wait for nothing.
        if (Date.now() + waitMs >= endsAt) {
          throw new ProviderError({
            provider,
            kind: 'timeout',
            status: error.status,
            message: `${error.message} (Retrying in ${Math.ceil(waitMs / 1000)} s would pass the ${timeoutMs / 1000} s limit: LLM_TIMEOUT_SECONDS in .env, retries included.)`,
            cause: error,
          });
        }
        onRetry({ provider, status: error.status, waitMs, attempt, reason: error.kind });
        lastError = error;
        await sleep(waitMs, signal);
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

function abortedError(provider: string, cause: unknown): ProviderError {
  return new ProviderError({
    provider,
    kind: 'aborted',
    message: `The request to ${provider} was cancelled.`,
    cause,
  });
}

/** The deadline passed during an attempt; `lastError` is what the attempt before it (if any) ran into. */
function timeoutError(
  provider: string,
  timeoutMs: number,
  lastError: ProviderError | undefined,
): ProviderError {
  const sentence = `${capitalized(provider)} did not answer within ${timeoutMs / 1000} s (LLM_TIMEOUT_SECONDS in .env; retries included).`;
  return new ProviderError({
    provider,
    kind: 'timeout',
    message: lastError ? `${sentence} Before that: ${lastError.message}` : sentence,
    cause: lastError,
  });
}

/** Exponential backoff with jitter, so many clients hit by the same outage do not retry in step. */
function backoff(attempt: number): number {
  const ceiling = BASE_DELAY_MS * 2 ** (attempt - 1);
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

async function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleepFor(ms, undefined, { signal });
  } catch {
    // Aborted while waiting: return now; the next attempt fails at once and withRetries says why.
  }
}

/** "rate limited by Gemini, retrying in 41 s…" — the same wording the agent's trace uses. */
export function describeRetry(info: RetryInfo): string {
  // Short waits keep a decimal ("0.5 s"); long ones are rounded ("41 s").
  const seconds =
    info.waitMs < 10_000 ? Math.round(info.waitMs / 100) / 10 : Math.round(info.waitMs / 1000);
  const why =
    info.reason === 'rate_limit'
      ? `rate limited by ${info.provider}`
      : info.reason === 'connection'
        ? `could not reach ${info.provider}`
        : `${info.provider} is having trouble (${info.status})`;
  return `${why}, retrying in ${seconds} s… (retry ${info.attempt} of ${MAX_RETRIES})`;
}

function printRetry(info: RetryInfo): void {
  console.error(dim(describeRetry(info), process.stderr));
}
