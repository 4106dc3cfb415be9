// What a test scripts the fake provider to answer, and what it reads back of a request: shared by the server and its two wire formats.
import type { ProviderName } from '../config.ts';

/** One scripted model reply, written once and rendered in whichever wire format was asked for. */
export interface ScriptedReply {
  /** The answer. As a list: the chunks it streams in, one per event (a whole reply joins them). */
  text?: string | string[];
  /** A thought summary part before the answer (Gemini only); the answer text must not include it. */
  thought?: string;
  /** `arguments` as a string is sent verbatim (OpenAI), to imitate a model writing malformed JSON. */
  tool_calls?: Array<{ name: string; arguments?: Record<string, unknown> | string; id?: string }>;
  /** Answer with an HTTP error instead of a reply. */
  error?: ScriptedError;
  /**
   * Answer 200 with this body, sent verbatim (a string as-is, an object as JSON), for what the fields above
   * cannot express: a body that is not JSON, an OpenAI 'custom' tool call, content as a list of parts, a
   * tool call without an id or a name.
   */
  body?: string | object;
  /** The server waits for this before answering: lets a test act while a request is in flight. */
  gate?: Promise<unknown>;
  /** The token counts sent (default: estimated from the request and reply); 'none' sends no usage at all. */
  usage?: { input: number; output: number } | 'none';
  /** How the reply streams; only `paceMs` also applies to a whole reply. */
  stream?: ScriptedStream;
}

export interface ScriptedStream {
  /**
   * Milliseconds between two chunks of what the model writes (text, calls; the other chunks follow at
   * once), as a model writing. A whole reply comes when its last chunk would have.
   */
  paceMs?: number;
  /** OpenAI: every call's arguments arrive in this many fragments (default 1: each call whole). */
  argumentChunks?: number;
  /** OpenAI: what some compatible servers do differently (see fake-openai.ts). */
  quirks?: OpenAIQuirk[];
  /** Something that goes wrong once `after` chunks have been sent. */
  fault?: StreamFault;
  /** These events are sent verbatim instead (objects as JSON), for chunks the fields above cannot express. */
  events?: unknown[];
}

/**
 * Ollama has left out a tool call's `index` (ollama #7881) and given every call of a parallel batch
 * index 0 (#15457); vLLM has left out its `type` (vllm #16340).
 */
export type OpenAIQuirk = 'no-index' | 'reused-index' | 'no-type';

type StreamFault =
  /** An error event in the provider's own shape, then the end of the stream. */
  | { after: number; error: ScriptedError }
  /** The connection is cut. */
  | { after: number; drop: true }
  /** Nothing more is sent until the promise settles: never, for a promise that never does. */
  | { after: number; stall: Promise<unknown> };

export interface ScriptedError {
  status: number;
  message?: string;
  /** Gemini: a RetryInfo detail, e.g. "41s". */
  retryDelay?: string;
  /** Gemini: a QuotaFailure detail, e.g. "GenerateRequestsPerDayPerProjectPerModel-FreeTier". */
  quotaId?: string;
  /** OpenAI: the error code, e.g. "insufficient_quota". */
  code?: string;
  /** HTTP retry-after header, in seconds. */
  retryAfter?: string;
}

/** A reply, or a function that writes one from the request (e.g. an answer built from a tool result). */
export type Reply = ScriptedReply | ((request: ChatView) => ScriptedReply);

/** A provider-neutral reading of a chat request, for reply functions and assertions. */
export interface ChatView {
  provider: ProviderName;
  system: string;
  messages: ViewMessage[];
  /** The text of the last message the customer typed. */
  lastUserText: string;
  /** Tool results sent since the model's last reply: what this request answers. */
  toolResults: Array<{ name: string; result: unknown }>;
  tools: string[];
}

export interface ViewMessage {
  role: 'user' | 'assistant' | 'tool';
  text?: string;
  tool_calls?: Array<{ id?: string; name: string; arguments: unknown; signature?: string }>;
  tool_result?: { id?: string; name: string; result: unknown };
}
