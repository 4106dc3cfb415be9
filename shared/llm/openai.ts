// Talks to OpenAI (or any OpenAI-compatible server) through Chat Completions with the openai SDK.
import OpenAI, { APIError } from 'openai';
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { OpenAISettings } from '../config.ts';
import { uniqueCallId } from './call-ids.ts';
import { ProviderError, capitalized, firstLine, kindForStatus, parseRetryAfter } from './errors.ts';
import {
  isPlainObject,
  type AssistantMessage,
  type ChatResult,
  type Message,
  type ToolCall,
  type ToolDefinition,
} from './messages.ts';
import { openaiProviderName } from './openai-name.ts';
import { parseOpenAIArguments, providerRawAgrees } from './provider-raw.ts';
import {
  argumentsTooLong,
  boundedAnswer,
  MAX_ARGUMENTS_CHARS,
  MAX_NAME_CHARS,
} from './reply-limits.ts';
import { checkedUsage } from './usage.ts';

export function client(settings: OpenAISettings): OpenAI {
  return new OpenAI({
    apiKey: settings.apiKey,
    baseURL: settings.baseUrl ?? 'https://api.openai.com/v1',
    // Not the SDK's own OPENAI_ORG_ID and OPENAI_PROJECT_ID: every setting comes from ours.
    organization: null,
    project: null,
    maxRetries: 0, // retries are ours (retry.ts), so every wait is visible and honours the provider's hints
    // Our deadline (retry.ts) bounds the whole call. The SDK's own timer (10 minutes unless set) must never
    // end an attempt first, so it is set just past that deadline.
    timeout: settings.timeoutMs + 1000,
  });
}

export async function openaiChat(
  settings: OpenAISettings,
  messages: Message[],
  tools: ToolDefinition[],
  signal: AbortSignal,
): Promise<ChatResult> {
  const completion = await client(settings).chat.completions.create(
    chatRequest(settings, messages, tools),
    { signal },
  );
  // The SDK's types promise a ChatCompletion, but its body is whatever the server sent (a string when not JSON).
  return fromCompletion(completion as unknown, settings);
}

/** What a chat request sends, streamed (the full Nimbus's model/, Part 6) or not: model, history, tools, reasoning effort. */
export function chatRequest(
  settings: OpenAISettings,
  messages: Message[],
  tools: ToolDefinition[],
): ChatCompletionCreateParamsNonStreaming {
  const effort = reasoningEffort(settings, tools.length > 0);
  return {
    model: settings.model,
    messages: toOpenAIMessages(messages),
    ...(tools.length
      ? {
          tools: tools.map((tool) => ({
            type: 'function' as const,
            function: {
              name: tool.name,
              description: tool.description,
              parameters: tool.parameters,
            },
          })),
        }
      : {}),
    ...(effort ? { reasoning_effort: effort as OpenAI.ReasoningEffort } : {}),
  };
}

/**
 * OpenAI's gpt-5.x models refuse tools together with reasoning on Chat Completions unless reasoning is
 * switched off explicitly. Other servers may not know the parameter at all, so it is only sent to them
 * when OPENAI_REASONING_EFFORT asks for it.
 */
export function reasoningEffort(settings: OpenAISettings, hasTools: boolean): string | undefined {
  if (settings.reasoningEffort) return settings.reasoningEffort;
  if (!settings.baseUrl && hasTools && /^gpt-5\.\d/.test(settings.model)) return 'none';
  return undefined;
}

function toOpenAIMessages(messages: Message[]): ChatCompletionMessageParam[] {
  const result: ChatCompletionMessageParam[] = [];
  for (const message of messages) {
    if (message.role === 'system' || message.role === 'user') {
      result.push({ role: message.role, content: message.content });
    } else if (message.role === 'tool') {
      result.push({ role: 'tool', tool_call_id: message.tool_call_id, content: message.content });
    } else if (message.provider_raw?.provider === 'openai' && providerRawAgrees(message)) {
      // OpenAI's own message goes back exactly as it arrived.
      result.push(message.provider_raw.message as ChatCompletionMessageParam);
    } else if (message.content || message.tool_calls?.length) {
      // Another provider wrote it, or its raw disagrees (provider-raw.ts): rebuild from the neutral
      // fields. An empty reply is left out.
      result.push({
        role: 'assistant',
        content: message.content || null,
        ...(message.tool_calls?.length
          ? {
              tool_calls: message.tool_calls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: JSON.stringify(call.arguments) },
              })),
            }
          : {}),
      });
    }
  }
  return result;
}

/**
 * Reads a completion field by field: a server that only imitates OpenAI may send anything. A streamed
 * reply is read here too, once a stream's fragments are put back together (the full Nimbus's model/).
 */
export function fromCompletion(completion: unknown, settings: OpenAISettings): ChatResult {
  const Provider = capitalized(openaiProviderName(settings));
  if (!isPlainObject(completion)) throw notJsonError(settings, preview(completion));
  const choice: unknown = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const raw: unknown = isPlainObject(choice) ? choice.message : undefined;
  if (!isPlainObject(raw)) {
    throw badResponse(
      settings,
      `${Provider} answered 200, but its body had no choices[0].message (${preview(completion)}).`,
    );
  }
  const fullText = replyText(raw);
  if (fullText === undefined) {
    const content = raw.content;
    throw badResponse(
      settings,
      `${Provider}'s reply had content of type ${typeof content} where text was expected (${preview(content)}).`,
    );
  }
  // Bounded before anything else reads it (reply-limits.ts). What was cut is still in the raw, so a
  // reply that was cut keeps no raw: it would replay what we refused to hold.
  const text = boundedAnswer(fullText);
  const { toolCalls, cut: callsCut } = readToolCalls(raw.tool_calls);
  const cut = callsCut || text !== fullText;
  const message: AssistantMessage = {
    role: 'assistant',
    content: text,
    ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
  };
  const withRaw: AssistantMessage = {
    ...message,
    provider_raw: { provider: 'openai', message: raw },
  };
  const usage = isPlainObject(completion.usage) ? completion.usage : undefined;
  return {
    text,
    tool_calls: toolCalls,
    message: !cut && providerRawAgrees(withRaw) ? withRaw : message,
    usage: usage ? checkedUsage(usage.prompt_tokens, usage.completion_tokens) : undefined,
  };
}

/** The calls of a reply that can be run, bounded; `cut` when a name or arguments were over the limit. */
function readToolCalls(calls: unknown): { toolCalls: ToolCall[]; cut: boolean } {
  const toolCalls: ToolCall[] = [];
  const ids = new Set<string>();
  let cut = false;
  for (const call of Array.isArray(calls) ? calls : []) {
    // Only function calls are ours to run; another type ('custom') stays in the raw, which then disagrees.
    if (!isPlainObject(call) || call.type !== 'function' || !isPlainObject(call.function)) continue;
    const { name, arguments: args } = call.function;
    // A call without a name can be neither run nor answered, so it is left out too.
    if (typeof name !== 'string' || !name) continue;
    const tooLong = typeof args === 'string' && args.length > MAX_ARGUMENTS_CHARS;
    cut ||= tooLong || name.length > MAX_NAME_CHARS;
    toolCalls.push({
      // Ours when the server sent none (or repeated one); it stays with the call in the history from now
      // on. The raw then disagrees and is not replayed: OpenAI needs every id to be there and unique.
      id: uniqueCallId(call.id, ids),
      name: name.slice(0, MAX_NAME_CHARS),
      ...(tooLong ? argumentsTooLong() : parseOpenAIArguments(args)),
    });
  }
  return { toolCalls, cut };
}

/**
 * The reply's text, or undefined when it is not text at all. OpenAI sends a string (or null, with a refusal
 * or tool calls); some compatible servers send a list of parts, [{ type: 'text', text }], as requests may.
 */
function replyText(raw: Record<string, unknown>): string | undefined {
  const content = raw.content ?? raw.refusal ?? '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .filter((part) => isPlainObject(part) && part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('');
}

export function badResponse(
  settings: OpenAISettings,
  message: string,
  cause?: unknown,
): ProviderError {
  return new ProviderError({
    provider: openaiProviderName(settings),
    kind: 'bad_response',
    message,
    cause,
  });
}

/** A 200 whose body is not JSON (or not an object): most often a base URL that points at a web page, not the API. */
function notJsonError(settings: OpenAISettings, detail: string, cause?: unknown): ProviderError {
  const Provider = capitalized(openaiProviderName(settings));
  const hint = settings.baseUrl ? ' Check OPENAI_BASE_URL in .env.' : '';
  return badResponse(
    settings,
    `${Provider} answered 200, but its body was not JSON (${detail}).${hint}`,
    cause,
  );
}

/** The first characters of an odd body, enough to recognise a web page or a proxy's message. */
function preview(value: unknown): string {
  if (value === undefined || value === '') return 'empty';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
}

export async function openaiEmbed(
  settings: OpenAISettings,
  texts: string[],
  signal: AbortSignal,
): Promise<number[][]> {
  const response = await client(settings).embeddings.create(
    // 'float' asks for the plain arrays we read, which compatible servers send whatever is asked. The SDK's
    // own default is base64, decoded for us: openai 6 turned plain arrays sent back then into [] silently.
    { model: settings.embeddingModel!, input: texts, encoding_format: 'float' },
    { signal },
  );
  // Checked item by item, like a chat reply: a compatible server may send anything.
  const data: unknown = response?.data;
  const items = Array.isArray(data) ? data.filter(isPlainObject) : [];
  const vectors = items
    .sort((a, b) => Number(a.index) - Number(b.index))
    .map((item) => item.embedding);
  const usable = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0;
  if (vectors.length !== texts.length || !vectors.every(usable)) {
    const count = vectors.filter(usable).length;
    throw badResponse(
      settings,
      `${capitalized(openaiProviderName(settings))} returned ${count} usable embeddings for ${texts.length} texts.`,
    );
  }
  return vectors;
}

/** Any failure from the openai SDK → a ProviderError with a sentence a learner can act on. */
export function openaiError(error: unknown, settings: OpenAISettings): ProviderError {
  if (error instanceof ProviderError) return error;
  const provider = openaiProviderName(settings);
  const Provider = capitalized(provider);
  // The SDK parses a success body as JSON when the server says it is; a proxy's error page may say so wrongly.
  if (error instanceof SyntaxError) return notJsonError(settings, error.message, error);
  if (!(error instanceof APIError) || error.status === undefined) {
    return new ProviderError({
      provider,
      kind: 'connection',
      message: `Could not reach ${provider}${settings.baseUrl ? ` at ${settings.baseUrl}` : ''} (${(error as Error)?.message}). Check your connection${settings.baseUrl ? ' and OPENAI_BASE_URL' : ''}.`,
      cause: error,
    });
  }

  const status = error.status;
  const text = firstLine(
    (error.error as { message?: string } | undefined)?.message ?? error.message,
  );
  let kind = kindForStatus(status);
  let message = `${Provider} answered ${status}: ${text}`;
  if (error.code === 'insufficient_quota') {
    kind = 'quota';
    message = `${Provider} says the account has no quota left (insufficient_quota). Retrying will not help; check billing at https://platform.openai.com/settings/organization/billing.`;
  } else if (kind === 'auth') {
    message = `${Provider} rejected the API key (${status}). Check OPENAI_API_KEY in .env.`;
  } else if (status === 404) {
    message = `${Provider} does not know the model or path (404: ${text}). Check OPENAI_MODEL and OPENAI_BASE_URL in .env.`;
  } else if (status === 429) {
    message = `${Provider}'s rate limit was reached (429): ${text}`;
  }
  const headers = error.headers;
  const retryAfterMs = headers?.get('retry-after-ms')
    ? Number(headers.get('retry-after-ms'))
    : parseRetryAfter(headers?.get('retry-after'));
  return new ProviderError({ provider, kind, status, message, retryAfterMs, cause: error });
}
