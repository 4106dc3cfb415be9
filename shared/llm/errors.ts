// One error type for every provider failure, so callers never need to know which SDK threw.

export type ProviderErrorKind =
  | 'auth' // bad or missing key: fix .env
  | 'rate_limit' // too many requests right now: worth waiting
  | 'quota' // daily quota or no credit left: waiting minutes will not help
  | 'server' // the provider had a problem (5xx): worth retrying
  | 'connection' // no answer at all: network, wrong base URL, server down
  | 'bad_request' // the provider refused what we sent (400, 404, 422)
  | 'bad_response' // the provider answered, but with something we cannot read (not JSON, content of the wrong type)
  | 'timeout' // no answer within LLM_TIMEOUT_SECONDS, retries and their waits included
  | 'aborted' // we cancelled it (Ctrl-C)
  | 'other';

export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly provider: string;
  readonly kind: ProviderErrorKind;
  readonly status?: number;
  /** True when the same request may succeed later (rate limits, server errors, dropped connections). */
  readonly retryable: boolean;
  /** The wait the provider asked for (retry-after header or Gemini's RetryInfo), if any. */
  readonly retryAfterMs?: number;

  constructor(options: {
    provider: string;
    kind: ProviderErrorKind;
    message: string;
    status?: number;
    retryAfterMs?: number;
    /** Overrides what the kind implies: a streamed reply that broke off after text was shown is not retried. */
    retryable?: boolean;
    cause?: unknown;
  }) {
    super(options.message, { cause: options.cause });
    this.provider = options.provider;
    this.kind = options.kind;
    this.status = options.status;
    this.retryable =
      options.retryable ?? ['rate_limit', 'server', 'connection'].includes(options.kind);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** The kind of an HTTP failure, before provider-specific refinements (daily quota, bad key in a 400). */
export function kindForStatus(status: number | undefined): ProviderErrorKind {
  if (status === undefined) return 'connection';
  if (status === 401 || status === 403) return 'auth';
  if (status === 429) return 'rate_limit';
  if (status === 408 || status >= 500) return status === 501 ? 'bad_request' : 'server';
  if (status >= 400) return 'bad_request';
  return 'other';
}

/** `retry-after` is either seconds ("41") or an HTTP date; returns milliseconds from now. */
export function parseRetryAfter(
  value: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Google's protobuf durations look like "41s" or "41.8s". */
export function parseGoogleDuration(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
  return match ? Math.round(Number(match[1]) * 1000) : undefined;
}

/** "the OpenAI-compatible server" → "The OpenAI-compatible server", for a provider name that starts a sentence. */
export function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The first line of a provider's message, without trailing spaces: enough to explain, short enough to read. */
export function firstLine(text: string): string {
  return text.split('\n')[0].trim();
}
