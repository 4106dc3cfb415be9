// Talks to OpenAI (or any OpenAI-compatible server) through Chat Completions with the openai SDK.
import OpenAI, { APIError, APIUserAbortError } from 'openai';
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { OpenAISettings } from '../config.ts';
import { ProviderError, firstLine, kindForStatus, parseRetryAfter } from './errors.ts';
import type { AssistantMessage, ChatResult, Message, ToolCall, ToolDefinition } from './messages.ts';
import { openaiProviderName } from './openai-name.ts';

const TIMEOUT_MS = 180_000;

function client(settings: OpenAISettings): OpenAI {
  return new OpenAI({
    apiKey: settings.apiKey,
    baseURL: settings.baseUrl ?? 'https://api.openai.com/v1',
    maxRetries: 0, // retries are ours (retry.ts), so every wait is visible and honours the provider's hints
    timeout: TIMEOUT_MS,
  });
}

export async function openaiChat(
  settings: OpenAISettings,
  messages: Message[],
  tools: ToolDefinition[],
  signal?: AbortSignal,
): Promise<ChatResult> {
  const effort = reasoningEffort(settings, tools.length > 0);
  const completion = await client(settings).chat.completions.create(
    {
      model: settings.model,
      messages: toOpenAIMessages(messages),
      ...(tools.length
        ? {
            tools: tools.map((tool) => ({
              type: 'function' as const,
              function: { name: tool.name, description: tool.description, parameters: tool.parameters },
            })),
          }
        : {}),
      ...(effort ? { reasoning_effort: effort as OpenAI.ReasoningEffort } : {}),
    },
    { signal },
  );
  return fromCompletion(completion);
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

export function toOpenAIMessages(messages: Message[]): ChatCompletionMessageParam[] {
  const result: ChatCompletionMessageParam[] = [];
  for (const message of messages) {
    if (message.role === 'system' || message.role === 'user') {
      result.push({ role: message.role, content: message.content });
    } else if (message.role === 'tool') {
      result.push({ role: 'tool', tool_call_id: message.tool_call_id, content: message.content });
    } else if (message.provider_raw?.provider === 'openai') {
      // OpenAI's own message goes back exactly as it arrived.
      result.push(message.provider_raw.message as ChatCompletionMessageParam);
    } else if (message.content || message.tool_calls?.length) {
      // Another provider wrote it: rebuild from the neutral fields (an empty reply is left out).
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

export function fromCompletion(completion: ChatCompletion): ChatResult {
  const raw = completion.choices?.[0]?.message;
  const text = raw?.content ?? raw?.refusal ?? '';
  const toolCalls: ToolCall[] = (raw?.tool_calls ?? [])
    .filter((call) => call.type === 'function')
    .map((call) => ({ id: call.id, name: call.function.name, ...parseArguments(call.function.arguments) }));
  const message: AssistantMessage = {
    role: 'assistant',
    content: text,
    ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    ...(raw ? { provider_raw: { provider: 'openai', message: raw } } : {}),
  };
  const usage = completion.usage;
  return {
    text,
    tool_calls: toolCalls,
    message,
    usage: usage ? { input_tokens: usage.prompt_tokens ?? 0, output_tokens: usage.completion_tokens ?? 0 } : undefined,
  };
}

/** OpenAI sends arguments as a JSON string, which a model can get wrong. A bad string is reported, not thrown. */
function parseArguments(text: string): Pick<ToolCall, 'arguments' | 'arguments_error'> {
  try {
    const value: unknown = JSON.parse(text || '{}');
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      return { arguments: value as Record<string, unknown> };
    }
  } catch {
    // fall through
  }
  return { arguments: {}, arguments_error: `The arguments were not a valid JSON object: ${text.slice(0, 200)}` };
}

export async function openaiEmbed(
  settings: OpenAISettings,
  texts: string[],
  signal?: AbortSignal,
): Promise<number[][]> {
  const response = await client(settings).embeddings.create(
    // Without 'float' the SDK asks for base64, and servers that answer with plain arrays yield [] silently.
    { model: settings.embeddingModel!, input: texts, encoding_format: 'float' },
    { signal },
  );
  const vectors = [...response.data].sort((a, b) => a.index - b.index).map((item) => item.embedding);
  if (vectors.length !== texts.length || vectors.some((v) => !Array.isArray(v) || v.length === 0)) {
    throw new ProviderError({
      provider: 'OpenAI',
      kind: 'other',
      message: `The embeddings endpoint returned ${vectors.length} usable vectors for ${texts.length} texts.`,
    });
  }
  return vectors;
}

/** Any failure from the openai SDK → a ProviderError with a sentence a learner can act on. */
export function openaiError(error: unknown, settings: OpenAISettings): ProviderError {
  if (error instanceof ProviderError) return error;
  const provider = openaiProviderName(settings);
  const Provider = provider[0].toUpperCase() + provider.slice(1); // for the start of a sentence
  if (error instanceof APIUserAbortError || (error instanceof Error && error.name === 'AbortError')) {
    return new ProviderError({ provider, kind: 'aborted', message: `The request to ${provider} was cancelled.`, cause: error });
  }
  if (!(error instanceof APIError) || error.status === undefined) {
    return new ProviderError({
      provider,
      kind: 'connection',
      message: `Could not reach ${provider}${settings.baseUrl ? ` at ${settings.baseUrl}` : ''} (${(error as Error)?.message}). Check your connection${settings.baseUrl ? ' and OPENAI_BASE_URL' : ''}.`,
      cause: error,
    });
  }

  const status = error.status;
  const text = firstLine((error.error as { message?: string } | undefined)?.message ?? error.message);
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
