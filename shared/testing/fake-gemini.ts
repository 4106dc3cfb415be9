// The fake server's Gemini side: generateContent, its stream and batchEmbedContents as @google/genai sends and reads them.
import { randomBytes } from 'node:crypto';
import { fakeEmbedding } from './embeddings.ts';
import type { ScriptedError, ViewMessage } from './fake-script.ts';
import {
  chatView,
  DEFAULT_DIMENSIONS,
  defaultErrorMessage,
  type FakeWire,
  type ReplyToRender,
} from './fake-wire.ts';

/** Gemini's documented values that skip signature validation for calls it did not produce. */
const DUMMY_SIGNATURES = new Set([
  'skip_thought_signature_validator',
  'context_engineering_is_the_way_to_go',
]);

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

interface GeminiWireOptions {
  /** Sign replies, as Gemini 3 does: the signatures must then come back on the calls they were issued with. */
  signatures: boolean;
  /** Give function calls ids (the real API often does not). */
  ids: boolean;
}

export function geminiWire(options: GeminiWireOptions): FakeWire {
  // Every signature this server handed out: a replayed one must be among them (or a documented dummy).
  const issued = new Set<string>();
  return {
    // Both API versions serve the same three methods: @google/genai 3 calls the stable /v1 unless told
    // otherwise, 2.x and a client pinned to the beta call /v1beta. Any other version is a 404, as on Google's.
    route(path) {
      const match =
        /^\/(?:v1|v1beta)\/models\/([^:/]+):(generateContent|streamGenerateContent|batchEmbedContents)$/.exec(
          path,
        );
      if (!match) return undefined;
      return { kind: match[2] === 'batchEmbedContents' ? 'embed' : 'chat', model: match[1] };
    },
    // The SDK asks for server-sent events (?alt=sse), one whole GenerateContentResponse each.
    streamed: (path) => path.endsWith(':streamGenerateContent'),
    rejection: (body) => rejection(body, issued),
    view,
    render(reply, model, counter) {
      const signature = options.signatures
        ? `sig-${counter}-${randomBytes(6).toString('base64url')}`
        : undefined;
      if (signature) issued.add(signature);
      return renderReply(reply, { model, counter, signature, ids: options.ids });
    },
    chunks,
    // The signed empty part at the end comes with the last words, not after a pause of its own.
    written: (event: any) => {
      const part = event?.candidates?.[0]?.content?.parts?.[0];
      return Boolean(part?.text || part?.functionCall);
    },
    embeddings(body, model) {
      const requests: any[] = body.requests ?? [];
      return {
        embeddings: requests.map((request) => ({
          values: fakeEmbedding(
            (request.content?.parts ?? []).map((p: any) => p.text ?? '').join(' '),
            request.outputDimensionality ?? DEFAULT_DIMENSIONS,
            model,
          ),
        })),
      };
    },
    error: errorBody,
  };
}

/** What the real Gemini API rejects that our code could get wrong. Returns its error message, or undefined. */
function rejection(body: any, issued: Set<string>): string | undefined {
  const contents: any[] = body.contents;
  if (!Array.isArray(contents) || contents.length === 0)
    return '* GenerateContentRequest.contents: contents is not specified';
  for (const [i, content] of contents.entries()) {
    if (content.role !== 'user' && content.role !== 'model') {
      return `Please use a valid role: user, model. (content ${i} has role "${content.role}")`;
    }
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`;
    }
    for (const [j, part] of content.parts.entries()) {
      if (
        part.functionCall &&
        (typeof part.functionCall.name !== 'string' || !part.functionCall.name)
      ) {
        return `* GenerateContentRequest.contents[${i}].parts[${j}].function_call.name: Name cannot be empty.`;
      }
    }
  }
  for (const [i, content] of contents.entries()) {
    const calls = content.parts.filter((p: any) => p.functionCall);
    const responses = content.parts.filter((p: any) => p.functionResponse);
    if (responses.length) {
      const previous = contents[i - 1];
      const previousCalls =
        previous?.role === 'model' ? previous.parts.filter((p: any) => p.functionCall) : [];
      if (previousCalls.length === 0) {
        return 'Please ensure that function response turn comes immediately after a function call turn.';
      }
      if (previousCalls.length !== responses.length) {
        return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
      }
      for (const part of responses) {
        const response = part.functionResponse.response;
        if (typeof response !== 'object' || response === null || Array.isArray(response)) {
          return `Invalid value at 'contents[${i}].parts.function_response.response' (type.googleapis.com/google.protobuf.Struct)`;
        }
      }
    }
    if (calls.length) {
      const next = contents[i + 1];
      const answered = next?.parts?.filter((p: any) => p.functionResponse).length ?? 0;
      // The last content may be a model call only if it is the request's final message, which we never send.
      if (answered !== calls.length) {
        return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
      }
    }
  }
  // Thought signatures are validated for the current turn: everything after the last user text.
  let start = 0;
  contents.forEach((content, i) => {
    if (content.role === 'user' && content.parts.some((p: any) => typeof p.text === 'string'))
      start = i;
  });
  for (let i = start; i < contents.length; i++) {
    const content = contents[i];
    if (content.role !== 'model') continue;
    const first = content.parts.findIndex((p: any) => p.functionCall);
    if (first === -1) continue;
    const signature = content.parts[first].thoughtSignature;
    if (!signature) {
      return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${content.parts[first].functionCall.name}\`, position ${i + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
    }
    if (!issued.has(signature) && !DUMMY_SIGNATURES.has(signature))
      return 'Corrupted thought signature.';
  }
  return undefined;
}

function view(body: any) {
  const messages: ViewMessage[] = [];
  for (const content of body.contents as any[]) {
    if (content.role === 'model') {
      const text = content.parts
        .filter((p: any) => typeof p.text === 'string' && !p.thought)
        .map((p: any) => p.text)
        .join('');
      const calls = content.parts
        .filter((p: any) => p.functionCall)
        .map((p: any) => ({
          id: p.functionCall.id,
          name: p.functionCall.name,
          arguments: p.functionCall.args ?? {},
          signature: p.thoughtSignature,
        }));
      messages.push({ role: 'assistant', text, ...(calls.length ? { tool_calls: calls } : {}) });
      continue;
    }
    for (const part of content.parts) {
      if (typeof part.text === 'string') messages.push({ role: 'user', text: part.text });
      if (part.functionResponse) {
        const response = part.functionResponse.response ?? {};
        messages.push({
          role: 'tool',
          tool_result: {
            id: part.functionResponse.id,
            name: part.functionResponse.name,
            result: 'output' in response ? response.output : response,
          },
        });
      }
    }
  }
  const system = (body.systemInstruction?.parts ?? []).map((p: any) => p.text ?? '').join('');
  const tools = (body.tools ?? [])
    .flatMap((t: any) => t.functionDeclarations ?? [])
    .map((d: any) => d.name);
  return chatView('gemini', system, messages, tools);
}

function renderReply(
  reply: ReplyToRender,
  options: { model: string; counter: number; signature?: string; ids: boolean },
) {
  const { model, counter, signature } = options;
  const parts: any[] = [];
  if (reply.thought) parts.push({ text: reply.thought, thought: true });
  if (reply.text !== undefined) parts.push({ text: reply.text });
  (reply.tool_calls ?? []).forEach((call, i) => {
    parts.push({
      functionCall: {
        ...(options.ids ? { id: call.id ?? `fc-${counter}-${i + 1}` } : {}),
        name: call.name,
        args: call.arguments ?? {},
      },
      // With parallel calls, only the first carries the signature, as Gemini 3 does.
      ...(signature && i === 0 ? { thoughtSignature: signature } : {}),
    });
  });
  if (parts.length === 0) parts.push({ text: '' });
  // Gemini 3 signs the last part of a reply without calls.
  if (signature && !reply.tool_calls?.length) parts[parts.length - 1].thoughtSignature = signature;
  const usage = reply.usage;
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    ...(usage && {
      usageMetadata: {
        promptTokenCount: usage.input,
        candidatesTokenCount: usage.output,
        totalTokenCount: usage.input + usage.output,
      },
    }),
    modelVersion: model,
    responseId: `resp-${counter}`,
  };
}

/**
 * The whole reply's parts, one per chunk, as Gemini streams them: the answer in its scripted chunks,
 * each function call whole. A signature that sat on the answer moves to a last, empty text part, as
 * Gemini 3 sends it when streaming. The last chunk says the reply is complete and carries the usage;
 * there is no end marker after it.
 */
function chunks(whole: any, reply: ReplyToRender): unknown[] {
  const { candidates, usageMetadata, ...rest } = whole;
  const { content, finishReason } = candidates[0];
  const parts: any[] = [];
  for (const part of content.parts) {
    if (typeof part.text !== 'string' || part.thought) {
      parts.push(part);
      continue;
    }
    const written = reply.textChunks.filter(Boolean).map((text) => ({ text }));
    parts.push(...written);
    if (part.thoughtSignature) parts.push({ text: '', thoughtSignature: part.thoughtSignature });
    else if (!written.length) parts.push({ text: '' });
  }
  const events: any[] = parts.map((part) => ({
    candidates: [{ content: { role: 'model', parts: [part] }, index: 0 }],
    ...rest,
  }));
  events.at(-1).candidates[0].finishReason = finishReason;
  if (usageMetadata) events.at(-1).usageMetadata = usageMetadata;
  return events;
}

/** Google's error shape, with the details our code reads: QuotaFailure (daily caps) and RetryInfo (waits). */
function errorBody(error: ScriptedError) {
  const details: unknown[] = [];
  if (error.quotaId) {
    details.push({
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [
        {
          quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
          quotaId: error.quotaId,
        },
      ],
    });
  }
  if (error.retryDelay)
    details.push({
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: error.retryDelay,
    });
  return {
    error: {
      code: error.status,
      message: error.message ?? defaultErrorMessage(error.status),
      status: STATUS_NAMES[error.status] ?? 'UNKNOWN',
      ...(details.length ? { details } : {}),
    },
  };
}
