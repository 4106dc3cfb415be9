// Talks to Gemini with @google/genai: neutral messages in, neutral ChatResult out.
import {
  ApiError,
  GoogleGenAI,
  type Content,
  type GenerateContentParameters,
  type GenerateContentResponse,
  type Part,
} from '@google/genai';
import type { GeminiSettings } from '../config.ts';
import { uniqueCallId } from './call-ids.ts';
import { ProviderError, firstLine, kindForStatus, parseGoogleDuration } from './errors.ts';
import {
  isPlainObject,
  type AssistantMessage,
  type ChatResult,
  type Message,
  type ToolCall,
  type ToolDefinition,
} from './messages.ts';
import { providerRawAgrees } from './provider-raw.ts';
import {
  argumentsTooLong,
  boundedAnswer,
  MAX_ARGUMENTS_CHARS,
  MAX_ID_CHARS,
  MAX_NAME_CHARS,
} from './reply-limits.ts';
import { checkedUsage } from './usage.ts';

/**
 * Gemini rejects a replayed function call without the thought signature it was issued with. For calls
 * Gemini did not write (another provider's history), its docs give this value to skip the check.
 */
const DUMMY_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';

/** Fewer dimensions than the default 3072: the same retrieval quality for a help center, a quarter of the storage. */
const GEMINI_EMBEDDING_DIMENSIONS = 768;

/** Where Gemini's API is, unless GEMINI_BASE_URL says otherwise. */
const GEMINI_API_URL = 'https://generativelanguage.googleapis.com/';

export function client(settings: GeminiSettings): GoogleGenAI {
  // Everything from our settings, nothing from the SDK's own variables: without a key the SDK would
  // read GEMINI_API_KEY or GOOGLE_API_KEY itself, GOOGLE_GENAI_USE_VERTEXAI would send it to Vertex AI,
  // and without a base URL GOOGLE_GEMINI_BASE_URL would send it, with the key, wherever it points.
  // No httpOptions.timeout: the SDK has none by default, and our deadline (retry.ts) bounds the whole call.
  // The SDK's timer would end an attempt as if we had cancelled it.
  // No apiVersion: the SDK's default, Gemini's stable v1, serves all we use (Part 1's README says which).
  return new GoogleGenAI({
    apiKey: settings.apiKey,
    vertexai: false,
    httpOptions: { baseUrl: settings.baseUrl ?? GEMINI_API_URL },
  });
}

export async function geminiChat(
  settings: GeminiSettings,
  messages: Message[],
  tools: ToolDefinition[],
  signal: AbortSignal,
): Promise<ChatResult> {
  const response = await client(settings).models.generateContent(
    chatRequest(settings, messages, tools, signal),
  );
  return fromResponse(response);
}

/** What generateContent and generateContentStream (the full Nimbus's model/, Part 6) both send: history, instructions, tools. */
export function chatRequest(
  settings: GeminiSettings,
  messages: Message[],
  tools: ToolDefinition[],
  signal: AbortSignal,
): GenerateContentParameters {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content);
  return {
    model: settings.model,
    contents: toContents(messages),
    config: {
      ...(system.length ? { systemInstruction: system.join('\n\n') } : {}),
      // parametersJsonSchema is sent as written; the older `parameters` field is rewritten by the SDK.
      ...(tools.length
        ? {
            tools: [
              {
                functionDeclarations: tools.map((tool) => ({
                  name: tool.name,
                  description: tool.description,
                  parametersJsonSchema: tool.parameters,
                })),
              },
            ],
          }
        : {}),
      abortSignal: signal,
    },
  };
}

/** Neutral history → Gemini `contents`. System messages travel separately as systemInstruction. */
function toContents(messages: Message[]): Content[] {
  const contents: Content[] = [];
  // For each call id: the id Gemini itself gave the call, which its functionResponse must echo.
  const geminiIds = new Map<string, string | undefined>();

  for (const message of messages) {
    if (message.role === 'system') continue;
    if (message.role === 'user') {
      contents.push({ role: 'user', parts: [{ text: message.content }] });
    } else if (message.role === 'assistant') {
      const content = toModelContent(message, geminiIds);
      if (content) contents.push(content);
    } else {
      const part: Part = {
        functionResponse: {
          ...(geminiIds.get(message.tool_call_id)
            ? { id: geminiIds.get(message.tool_call_id) }
            : {}),
          name: message.name,
          response: toResponseObject(message.content),
        },
      };
      // All results of one model step go in one user content; splitting them is a 400.
      const last = contents.at(-1);
      if (last?.role === 'user' && last.parts?.every((p) => p.functionResponse))
        last.parts.push(part);
      else contents.push({ role: 'user', parts: [part] });
    }
  }
  return contents;
}

function toModelContent(
  message: AssistantMessage,
  geminiIds: Map<string, string | undefined>,
): Content | undefined {
  const calls = message.tool_calls ?? [];
  if (message.provider_raw?.provider === 'gemini' && providerRawAgrees(message)) {
    // Gemini's own content goes back untouched: same parts, same order, signatures where they were.
    const raw = message.provider_raw.message as Content;
    const rawCalls = (raw.parts ?? []).filter((part) => part.functionCall);
    calls.forEach((call, i) => geminiIds.set(call.id, rawCalls[i]?.functionCall?.id));
    return { ...raw, role: 'model' };
  }
  // Another provider wrote it, or its raw disagrees (provider-raw.ts): rebuild from the neutral fields.
  const parts: Part[] = [];
  if (message.content) parts.push({ text: message.content });
  calls.forEach((call, i) => {
    geminiIds.set(call.id, undefined);
    parts.push({
      functionCall: { name: call.name, args: call.arguments },
      // Only the first call of a step carries a signature, as Gemini itself does.
      ...(i === 0 ? { thoughtSignature: DUMMY_THOUGHT_SIGNATURE } : {}),
    });
  });
  // An empty reply has nothing to replay, and Gemini rejects a content with no parts.
  return parts.length ? { role: 'model', parts } : undefined;
}

/** Gemini wants an object: results under `output`, failures under `error` (as its typings advise). */
function toResponseObject(content: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    value = content;
  }
  if (isPlainObject(value) && Object.keys(value).length === 1 && 'error' in value) return value;
  return { output: value };
}

/**
 * Reads the parts directly: the SDK's `.text` getter prints a warning whenever a reply has tool calls.
 * Every field is checked, as a server that only imitates Gemini may send anything. A streamed reply is
 * read here too, once a stream's chunks are put back together (the full Nimbus's model/).
 */
export function fromResponse(
  response: Pick<GenerateContentResponse, 'candidates' | 'usageMetadata'>,
): ChatResult {
  const content = response.candidates?.[0]?.content;
  const parts = Array.isArray(content?.parts) ? content.parts.filter(isPlainObject) : [];
  const fullText = parts
    .filter((part) => typeof part.text === 'string' && !part.thought)
    .map((part) => part.text)
    .join('');
  // Bounded before anything else reads it (reply-limits.ts). What was cut is still in the raw, so a
  // reply that was cut keeps no raw: it would replay what we refused to hold.
  const text = boundedAnswer(fullText);
  let cut = text !== fullText;
  const toolCalls: ToolCall[] = [];
  const ids = new Set<string>();
  for (const part of parts) {
    const call: unknown = part.functionCall;
    // A call without a name can be neither run nor answered, so it is left out (and the raw then disagrees).
    if (!isPlainObject(call) || typeof call.name !== 'string' || !call.name) continue;
    const args = call.args ?? {};
    const tooLong = isPlainObject(args) && JSON.stringify(args).length > MAX_ARGUMENTS_CHARS;
    // The raw keeps Gemini's own id, echoed back with the result: one too long to keep drops the raw.
    const longId = typeof call.id === 'string' && call.id.length > MAX_ID_CHARS;
    cut ||= tooLong || longId || call.name.length > MAX_NAME_CHARS;
    toolCalls.push({
      // Ours when Gemini sent none (or repeated one); it stays with the call in the history from now on.
      // The raw keeps Gemini's own, which toContents echoes back in the function response.
      id: uniqueCallId(call.id, ids),
      name: call.name.slice(0, MAX_NAME_CHARS),
      ...(tooLong ? argumentsTooLong() : geminiArguments(args)),
    });
  }
  const message: AssistantMessage = {
    role: 'assistant',
    content: text,
    ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
  };
  const withRaw: AssistantMessage = {
    ...message,
    provider_raw: { provider: 'gemini', message: content },
  };
  const usage = response.usageMetadata;
  return {
    text,
    tool_calls: toolCalls,
    message: !cut && providerRawAgrees(withRaw) ? withRaw : message,
    usage: usage
      ? checkedUsage(usage.promptTokenCount, usage.candidatesTokenCount, usage.thoughtsTokenCount)
      : undefined,
  };
}

/** A call's arguments as Gemini sent them: an object, or else none and an error the model is told. */
function geminiArguments(args: unknown): Pick<ToolCall, 'arguments' | 'arguments_error'> {
  if (isPlainObject(args)) return { arguments: args };
  return { arguments: {}, arguments_error: 'The arguments were not a JSON object.' };
}

export async function geminiEmbed(
  settings: GeminiSettings,
  texts: string[],
  task: 'document' | 'query',
  signal: AbortSignal,
): Promise<number[][]> {
  const response = await client(settings).models.embedContent({
    model: settings.embeddingModel,
    contents: texts,
    config: {
      // Gemini embeds questions and documents differently so that they meet in the middle.
      taskType: task === 'query' ? 'RETRIEVAL_QUERY' : 'RETRIEVAL_DOCUMENT',
      outputDimensionality: GEMINI_EMBEDDING_DIMENSIONS,
      abortSignal: signal,
    },
  });
  const vectors = Array.isArray(response.embeddings)
    ? response.embeddings.map((embedding) => embedding?.values)
    : [];
  const usable = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0;
  if (vectors.length !== texts.length || !vectors.every(usable)) {
    throw new ProviderError({
      provider: 'Gemini',
      kind: 'bad_response',
      message: `Gemini returned ${vectors.filter(usable).length} usable embeddings for ${texts.length} texts.`,
    });
  }
  return vectors;
}

/** Any failure from the Gemini SDK → a ProviderError with a sentence a learner can act on. */
export function geminiError(error: unknown, settings: GeminiSettings): ProviderError {
  if (error instanceof ProviderError) return error;
  const provider = 'Gemini';
  // The SDK parses every answer as JSON; a web page or a proxy's message is not.
  if (error instanceof SyntaxError) {
    return new ProviderError({
      provider,
      kind: 'bad_response',
      message: `Gemini answered, but its body was not JSON (${error.message}).${settings.baseUrl ? ' Check GEMINI_BASE_URL in .env.' : ''}`,
      cause: error,
    });
  }
  // fetch reports a network failure as a TypeError whose `cause` says why. One without a cause is the
  // SDK tripping over an answer it cannot read, such as a JSON null.
  if (error instanceof TypeError && error.cause === undefined) {
    return new ProviderError({
      provider,
      kind: 'bad_response',
      message: `Gemini answered, but with something the SDK could not read (${error.message}).${settings.baseUrl ? ' Check GEMINI_BASE_URL in .env.' : ''}`,
      cause: error,
    });
  }
  if (!(error instanceof ApiError)) {
    // fetch failed: no HTTP answer at all.
    const code = (error as { cause?: { code?: string } })?.cause?.code ?? (error as Error)?.message;
    return new ProviderError({
      provider,
      kind: 'connection',
      message: `Could not reach Gemini${settings.baseUrl ? ` at ${settings.baseUrl}` : ''} (${code}). Check your connection${settings.baseUrl ? ' and GEMINI_BASE_URL' : ''}.`,
      cause: error,
    });
  }

  // The SDK puts the whole JSON error body in the message; for an error sent inside a stream, after
  // "got status: INTERNAL. ".
  const body = parseJson(error.message.slice(Math.max(0, error.message.indexOf('{')))) as
    { error?: GoogleErrorBody } | undefined;
  const details = body?.error?.details ?? [];
  const text = firstLine(body?.error?.message ?? error.message);
  const status = error.status;
  let kind = kindForStatus(status);
  const retryDelay = details.find((d) => d['@type']?.endsWith('RetryInfo'))?.retryDelay;
  const quotaIds = details.flatMap((d) => d.violations ?? []).map((v) => v.quotaId ?? '');

  let message = `Gemini answered ${status}: ${text}`;
  if (status === 429 && quotaIds.some((id) => /PerDay/i.test(id))) {
    kind = 'quota';
    message = `Gemini's daily quota for ${settings.model} is used up (429). Retrying will not help until it resets; try tomorrow, another model (GEMINI_MODEL) or another key.`;
  } else if (kind === 'auth' || /API key not valid|API_KEY_INVALID/i.test(text)) {
    kind = 'auth';
    message = `Gemini rejected the API key (${status}). Check GEMINI_API_KEY in .env (get one at https://aistudio.google.com/apikey).`;
  } else if (status === 404) {
    message = `Gemini does not know the model in use (404: ${text}). Check GEMINI_MODEL and GEMINI_EMBEDDING_MODEL in .env.`;
  } else if (status === 429) {
    message = `Gemini's rate limit was reached (429): ${text}`;
  }
  return new ProviderError({
    provider,
    kind,
    status,
    message,
    retryAfterMs: parseGoogleDuration(retryDelay),
    cause: error,
  });
}

interface GoogleErrorBody {
  code?: number;
  message?: string;
  status?: string;
  details?: Array<{
    '@type'?: string;
    retryDelay?: string;
    violations?: Array<{ quotaId?: string }>;
  }>;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
