// The one message format the whole project uses, whichever provider answers. Part 6 stores it as-is.
//
//   { role: 'system', content }                  instructions; never stored, added fresh on every call
//   { role: 'user', content }                    what the customer typed
//   { role: 'assistant', content,                the model's reply: text (may be ''), and
//     tool_calls?: [{ id, name, arguments }],      the tools it wants run; `arguments` is an object
//     provider_raw?: { provider, message } }       the provider's own message, verbatim (see below)
//   { role: 'tool', tool_call_id, name, content } one tool's result; `content` is a JSON string
//
// Why provider_raw: the neutral fields are enough to rebuild a request, but a provider may attach
// data we do not model. Gemini signs its reasoning ("thought signatures") and rejects a replayed
// tool call that lost its signature. So every assistant message keeps the original, and it is
// replayed verbatim to the provider that wrote it, when it says what the neutral fields say
// (provider-raw.ts). Any other provider, or a raw that disagrees, gets the neutral fields.

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  content: string;
}

export interface ToolCall {
  /** Unique within the conversation. Providers that send no id get one we generate. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /**
   * Set when the call is not to be run, saying why for the model: its arguments were not a JSON object
   * or too long (`arguments` is then {}), or a limit of the caller's refused it. runTool answers with it.
   */
  arguments_error?: string;
}

export interface ProviderRaw {
  provider: 'gemini' | 'openai';
  /** Gemini: the candidate's `content`. OpenAI: the choice's `message`. Exactly as received. */
  message: unknown;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string;
  tool_calls?: ToolCall[];
  provider_raw?: ProviderRaw;
}

export interface ToolMessage {
  role: 'tool';
  tool_call_id: string;
  name: string;
  /** The tool's result as JSON text, e.g. '{"status":"shipped"}' or '{"error":"Order 9999 not found"}'. */
  content: string;
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A tool as the model sees it: a name, when to use it, and a JSON Schema for its arguments. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: {
    type: 'object';
    properties: Record<string, unknown>;
    required?: string[];
    additionalProperties?: boolean;
  };
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface ChatResult {
  /** The reply's text ('' when the model only asked for tools). */
  text: string;
  tool_calls: ToolCall[];
  /** The neutral assistant message to append to the history. */
  message: AssistantMessage;
  usage?: Usage;
}

export interface ChatOptions {
  /**
   * Abort the request (Ctrl-C). The promise then rejects with a ProviderError of kind 'aborted'.
   * (A call that runs past LLM_TIMEOUT_SECONDS, retries included, rejects with kind 'timeout' either way.)
   */
  signal?: AbortSignal;
  /** Called before each retry wait; the default prints one dim line to stderr. */
  onRetry?: (info: RetryInfo) => void;
  /** How to wait between retries. Tests pass a fake so they never really sleep. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface RetryInfo {
  provider: string;
  status?: number;
  /** How long we wait before the next attempt, in milliseconds. */
  waitMs: number;
  attempt: number;
  reason: string;
}

/** A JSON object ({…}), not null or an array: what a message, a tool call's arguments or a raw reply must be. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
