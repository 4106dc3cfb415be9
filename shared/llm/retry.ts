// Our retry policy, used instead of the SDKs' own: it honours the provider's wait hints and shows each wait.
import { setTimeout as sleepFor } from 'node:timers/promises';
import { dim } from '../cli.ts';
import { ProviderError } from './errors.ts';
import type { ChatOptions, RetryInfo } from './messages.ts';

/** Retries after the first attempt. Four requests in all is plenty for a blip; more just hides an outage. */
export const MAX_RETRIES = 3;
/** The longest wait we accept. A provider asking for more (an hourly limit, say) fails fast instead. */
export const MAX_WAIT_MS = 60_000;
/** First backoff step when the provider gives no hint: 1 s, then 2 s, 4 s (each with jitter). */
const BASE_DELAY_MS = 1000;

export async function withRetries<T>(
  provider: string,
  request: () => Promise<T>,
  toProviderError: (error: unknown) => ProviderError,
  options: ChatOptions = {},
): Promise<T> {
  const sleep = options.sleep ?? defaultSleep;
  const onRetry = options.onRetry ?? printRetry;
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (thrown) {
      const error = toProviderError(thrown);
      if (!error.retryable || attempt > MAX_RETRIES || options.signal?.aborted) throw error;
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
      onRetry({ provider, status: error.status, waitMs, attempt, reason: error.kind });
      await sleep(waitMs, options.signal);
      if (options.signal?.aborted) throw abortedError(provider);
    }
  }
}

function abortedError(provider: string): ProviderError {
  return new ProviderError({ provider, kind: 'aborted', message: `The request to ${provider} was cancelled.` });
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
    // Aborted while waiting: return now; the caller's aborted request ends the call.
  }
}

/** "rate limited by Gemini, retrying in 41 s…" — the same wording the agent's trace uses. */
export function describeRetry(info: RetryInfo): string {
  // Short waits keep a decimal ("0.5 s"); long ones are rounded ("41 s").
  const seconds = info.waitMs < 10_000 ? Math.round(info.waitMs / 100) / 10 : Math.round(info.waitMs / 1000);
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
