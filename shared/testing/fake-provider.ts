// A real HTTP server on 127.0.0.1 that speaks Gemini's and OpenAI's wire formats, so tests run the real SDKs.
//
// Tests queue the model's replies (text, tool calls, errors), read back every request, and rely on the
// server to reject what the real APIs reject: a tool call without its result, a result without its
// call, and on Gemini a current-turn function call that lost its thought signature.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakeEmbedding } from './embeddings.ts';

export type ProviderName = 'gemini' | 'openai';

/** One scripted model reply, written once and rendered in whichever wire format was asked for. */
export interface ScriptedReply {
  text?: string;
  /** A thought summary part before the answer (Gemini only); the answer text must not include it. */
  thought?: string;
  /** `arguments` as a string is sent verbatim (OpenAI), to imitate a model writing malformed JSON. */
  tool_calls?: Array<{ name: string; arguments?: Record<string, unknown> | string; id?: string }>;
  /** Answer with an HTTP error instead of a reply. */
  error?: ScriptedError;
  /** The server waits for this before answering: lets a test act while a request is in flight. */
  gate?: Promise<unknown>;
  usage?: { input: number; output: number };
}

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

export interface ReceivedRequest {
  provider: ProviderName;
  kind: 'chat' | 'embed';
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Set for chat requests that parsed. */
  view?: ChatView;
  /** The HTTP status we answered with (0 while still pending). */
  status: number;
  /** Our answer's error message, when we rejected the request. */
  rejection?: string;
  /** True when the client hung up before we answered (e.g. Ctrl-C). */
  aborted: boolean;
}

export interface FakeProviderOptions {
  /** Gemini sends function-call ids (the API often does not). Default false. */
  geminiIds?: boolean;
  /** Gemini signs its replies, as Gemini 3 does. Default true. */
  signatures?: boolean;
  /** What to answer when no reply is queued. Default: a short text naming the question. */
  fallback?: Reply;
}

export interface FakeProvider {
  url: string;
  requests: ReceivedRequest[];
  /** Only the chat requests, in order. */
  chats(): ReceivedRequest[];
  reply(...replies: Reply[]): void;
  /** Replies not used yet. */
  pending(): number;
  /** Resolves when the n-th chat request (1-based) has arrived. */
  waitForChat(n: number): Promise<ReceivedRequest>;
  /** Environment variables that point the project's code at this server for one provider. */
  env(provider: ProviderName): Record<string, string>;
  close(): Promise<void>;
}

/** Gemini's documented values that skip signature validation for calls it did not produce. */
const DUMMY_SIGNATURES = new Set(['skip_thought_signature_validator', 'context_engineering_is_the_way_to_go']);
export const FAKE_EMBEDDING_MODEL = 'fake-embedding-001';
const DEFAULT_DIMENSIONS = 256;

export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const queue: Reply[] = [];
  const requests: ReceivedRequest[] = [];
  const issuedSignatures = new Set<string>();
  const waiters: Array<{ n: number; resolve: (r: ReceivedRequest) => void }> = [];
  const signatures = options.signatures ?? true;
  let counter = 0;

  const chats = () => requests.filter((r) => r.kind === 'chat');
  const notifyWaiters = () => {
    const list = chats();
    for (const waiter of [...waiters]) {
      if (list.length >= waiter.n) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(list[waiter.n - 1]);
      }
    }
  };

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const rawBody = await readBody(req);
    let body: any;
    try {
      body = JSON.parse(rawBody || '{}');
    } catch {
      return send(res, 400, { error: { code: 400, message: 'Invalid JSON payload received.' } });
    }
    const route = routeFor(req.method ?? 'GET', url.pathname);
    if (!route) return send(res, 404, { error: { code: 404, message: `No fake route for ${req.method} ${url.pathname}` } });

    const record: ReceivedRequest = {
      provider: route.provider,
      kind: route.kind,
      path: url.pathname,
      headers: req.headers,
      body,
      status: 0,
      aborted: false,
    };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });

    if (route.kind === 'embed') {
      record.status = 200;
      return send(res, 200, route.provider === 'gemini' ? geminiEmbeddings(body, route.model) : openaiEmbeddings(body));
    }

    // A chat request: reject it as the real API would, or answer with the next scripted reply.
    const problem = route.provider === 'gemini' ? checkGemini(body, issuedSignatures) : checkOpenAI(body);
    if (problem) {
      record.status = 400;
      record.rejection = problem;
      notifyWaiters();
      return sendError(res, route.provider, { status: 400, message: problem });
    }
    record.view = route.provider === 'gemini' ? viewGemini(body) : viewOpenAI(body);
    notifyWaiters();

    const next: Reply = queue.shift() ?? options.fallback ?? ((view) => ({ text: `(fake model) You asked: ${view.lastUserText}` }));
    const reply = typeof next === 'function' ? next(record.view) : next;
    if (reply.gate) await reply.gate;
    if (record.aborted) return;
    if (reply.error) {
      record.status = reply.error.status;
      return sendError(res, route.provider, reply.error);
    }
    record.status = 200;
    counter++;
    if (route.provider === 'gemini') {
      return send(res, 200, geminiReply(reply, route.model, counter, signatures, options.geminiIds ?? false, issuedSignatures));
    }
    return send(res, 200, openaiReply(reply, body.model, counter));
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    chats,
    reply: (...replies) => queue.push(...replies),
    pending: () => queue.length,
    waitForChat: (n) =>
      new Promise((resolve) => {
        waiters.push({ n, resolve });
        notifyWaiters();
      }),
    env: (provider) => fakeEnv(provider, url),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every provider variable set explicitly, so a developer's own .env cannot leak into a test. */
export function fakeEnv(provider: ProviderName, url: string): Record<string, string> {
  return {
    LLM_PROVIDER: provider,
    GEMINI_API_KEY: provider === 'gemini' ? 'test-key' : '',
    GEMINI_MODEL: 'gemini-fake',
    GEMINI_EMBEDDING_MODEL: FAKE_EMBEDDING_MODEL,
    GEMINI_BASE_URL: provider === 'gemini' ? url : '',
    OPENAI_API_KEY: provider === 'openai' ? 'test-key' : '',
    OPENAI_MODEL: 'gpt-fake',
    OPENAI_EMBEDDING_MODEL: FAKE_EMBEDDING_MODEL,
    OPENAI_BASE_URL: provider === 'openai' ? `${url}/v1` : '',
    OPENAI_REASONING_EFFORT: '',
  };
}

function routeFor(method: string, path: string) {
  if (method !== 'POST') return undefined;
  const gemini = /^\/v1beta\/models\/([^:/]+):(generateContent|batchEmbedContents)$/.exec(path);
  if (gemini) {
    return { provider: 'gemini' as const, kind: gemini[2] === 'generateContent' ? ('chat' as const) : ('embed' as const), model: gemini[1] };
  }
  if (path === '/v1/chat/completions') return { provider: 'openai' as const, kind: 'chat' as const, model: '' };
  if (path === '/v1/embeddings') return { provider: 'openai' as const, kind: 'embed' as const, model: '' };
  return undefined;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: http.ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}) {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(payload));
}

// ---------------------------------------------------------------------------------------------------
// Errors, in each provider's own shape.

const GEMINI_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

function sendError(res: http.ServerResponse, provider: ProviderName, error: ScriptedError) {
  const headers: Record<string, string> = error.retryAfter ? { 'retry-after': error.retryAfter } : {};
  if (provider === 'gemini') {
    const details: unknown[] = [];
    if (error.quotaId) {
      details.push({
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests', quotaId: error.quotaId }],
      });
    }
    if (error.retryDelay) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: error.retryDelay });
    return send(
      res,
      error.status,
      {
        error: {
          code: error.status,
          message: error.message ?? defaultErrorMessage(error.status),
          status: GEMINI_STATUS[error.status] ?? 'UNKNOWN',
          ...(details.length ? { details } : {}),
        },
      },
      headers,
    );
  }
  return send(
    res,
    error.status,
    {
      error: {
        message: error.message ?? defaultErrorMessage(error.status),
        type: error.status === 429 ? 'requests' : 'invalid_request_error',
        param: null,
        code: error.code ?? null,
      },
    },
    headers,
  );
}

function defaultErrorMessage(status: number): string {
  if (status === 401) return 'Incorrect API key provided.';
  if (status === 429) return 'You exceeded your current quota, please check your plan and billing details.';
  if (status === 503) return 'The model is overloaded. Please try again later.';
  return `Fake error ${status}`;
}

// ---------------------------------------------------------------------------------------------------
// Gemini

/** What the real Gemini API rejects that our code could get wrong. Returns the error message, or undefined. */
function checkGemini(body: any, issued: Set<string>): string | undefined {
  const contents: any[] = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return '* GenerateContentRequest.contents: contents is not specified';
  for (const [i, content] of contents.entries()) {
    if (content.role !== 'user' && content.role !== 'model') {
      return `Please use a valid role: user, model. (content ${i} has role "${content.role}")`;
    }
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.`;
    }
  }
  for (const [i, content] of contents.entries()) {
    const calls = content.parts.filter((p: any) => p.functionCall);
    const responses = content.parts.filter((p: any) => p.functionResponse);
    if (responses.length) {
      const previous = contents[i - 1];
      const previousCalls = previous?.role === 'model' ? previous.parts.filter((p: any) => p.functionCall) : [];
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
    if (content.role === 'user' && content.parts.some((p: any) => typeof p.text === 'string')) start = i;
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
    if (!issued.has(signature) && !DUMMY_SIGNATURES.has(signature)) return 'Corrupted thought signature.';
  }
  return undefined;
}

function viewGemini(body: any): ChatView {
  const messages: ViewMessage[] = [];
  for (const content of body.contents as any[]) {
    if (content.role === 'model') {
      const text = content.parts.filter((p: any) => typeof p.text === 'string' && !p.thought).map((p: any) => p.text).join('');
      const calls = content.parts
        .filter((p: any) => p.functionCall)
        .map((p: any) => ({ id: p.functionCall.id, name: p.functionCall.name, arguments: p.functionCall.args ?? {}, signature: p.thoughtSignature }));
      messages.push({ role: 'assistant', text, ...(calls.length ? { tool_calls: calls } : {}) });
      continue;
    }
    for (const part of content.parts) {
      if (typeof part.text === 'string') messages.push({ role: 'user', text: part.text });
      if (part.functionResponse) {
        const response = part.functionResponse.response ?? {};
        messages.push({
          role: 'tool',
          tool_result: { id: part.functionResponse.id, name: part.functionResponse.name, result: 'output' in response ? response.output : response },
        });
      }
    }
  }
  const system = (body.systemInstruction?.parts ?? []).map((p: any) => p.text ?? '').join('');
  const tools = (body.tools ?? []).flatMap((t: any) => t.functionDeclarations ?? []).map((d: any) => d.name);
  return finishView('gemini', system, messages, tools);
}

function geminiReply(
  reply: ScriptedReply,
  model: string,
  counter: number,
  signed: boolean,
  withIds: boolean,
  issued: Set<string>,
) {
  const signature = `sig-${counter}-${randomBytes(6).toString('base64url')}`;
  const parts: any[] = [];
  if (reply.thought) parts.push({ text: reply.thought, thought: true });
  if (reply.text !== undefined) parts.push({ text: reply.text });
  (reply.tool_calls ?? []).forEach((call, i) => {
    parts.push({
      functionCall: { ...(withIds ? { id: call.id ?? `fc-${counter}-${i + 1}` } : {}), name: call.name, args: call.arguments ?? {} },
      ...(signed && i === 0 ? { thoughtSignature: signature } : {}),
    });
  });
  if (parts.length === 0) parts.push({ text: '' });
  // Gemini 3 signs the last part of a reply without calls.
  if (signed && !reply.tool_calls?.length) parts[parts.length - 1].thoughtSignature = signature;
  if (signed) issued.add(signature);
  const usage = reply.usage ?? { input: 100 + counter, output: 20 };
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: usage.input, candidatesTokenCount: usage.output, totalTokenCount: usage.input + usage.output },
    modelVersion: model,
    responseId: `resp-${counter}`,
  };
}

function geminiEmbeddings(body: any, model: string) {
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
}

// ---------------------------------------------------------------------------------------------------
// OpenAI

function checkOpenAI(body: any): string | undefined {
  const messages: any[] = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return "Invalid 'messages': empty array. Expected an array with minimum length 1.";
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!['system', 'developer', 'user', 'assistant', 'tool'].includes(message.role)) {
      return `Invalid value: '${message.role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.`;
    }
    if (message.role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length) {
      const answered = new Set<string>();
      for (let j = i + 1; j < messages.length && messages[j].role === 'tool'; j++) answered.add(messages[j].tool_call_id);
      const missing = message.tool_calls.map((c: any) => c.id).filter((id: string) => !answered.has(id));
      if (missing.length) {
        return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`;
      }
    }
    if (message.role === 'tool') {
      let j = i - 1;
      while (j >= 0 && messages[j].role === 'tool') j--;
      const owner = messages[j];
      const ids = owner?.role === 'assistant' ? (owner.tool_calls ?? []).map((c: any) => c.id) : [];
      if (!ids.includes(message.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
    }
  }
  return undefined;
}

function viewOpenAI(body: any): ChatView {
  const messages: ViewMessage[] = [];
  const names = new Map<string, string>();
  let system = '';
  for (const message of body.messages as any[]) {
    if (message.role === 'system' || message.role === 'developer') system += textOf(message.content);
    else if (message.role === 'user') messages.push({ role: 'user', text: textOf(message.content) });
    else if (message.role === 'assistant') {
      const calls = (message.tool_calls ?? []).map((c: any) => {
        names.set(c.id, c.function.name);
        return { id: c.id, name: c.function.name, arguments: parseMaybe(c.function.arguments) };
      });
      messages.push({ role: 'assistant', text: textOf(message.content), ...(calls.length ? { tool_calls: calls } : {}) });
    } else if (message.role === 'tool') {
      messages.push({
        role: 'tool',
        tool_result: { id: message.tool_call_id, name: names.get(message.tool_call_id) ?? '', result: parseMaybe(message.content) },
      });
    }
  }
  const tools = (body.tools ?? []).map((t: any) => t.function?.name);
  return finishView('openai', system, messages, tools);
}

function openaiReply(reply: ScriptedReply, model: string, counter: number) {
  const calls = (reply.tool_calls ?? []).map((call, i) => ({
    id: call.id ?? `call_${counter}_${i + 1}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
    },
  }));
  const usage = reply.usage ?? { input: 100 + counter, output: 20 };
  return {
    id: `chatcmpl-${counter}`,
    object: 'chat.completion',
    created: 1767225600 + counter,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          refusal: null,
          ...(calls.length ? { tool_calls: calls } : {}),
        },
        logprobs: null,
        finish_reason: calls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
  };
}

function openaiEmbeddings(body: any) {
  const inputs: string[] = Array.isArray(body.input) ? body.input : [body.input];
  const data = inputs.map((input, index) => {
    const vector = fakeEmbedding(String(input), body.dimensions ?? DEFAULT_DIMENSIONS, body.model);
    // Like the real API: base64 unless the client asks for floats.
    const embedding =
      body.encoding_format === 'float' ? vector : Buffer.from(new Float32Array(vector).buffer).toString('base64');
    return { object: 'embedding', index, embedding };
  });
  return { object: 'list', data, model: body.model, usage: { prompt_tokens: inputs.length, total_tokens: inputs.length } };
}

// ---------------------------------------------------------------------------------------------------
// Shared helpers

function finishView(provider: ProviderName, system: string, messages: ViewMessage[], tools: string[]): ChatView {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  let i = messages.length - 1;
  const toolResults: ChatView['toolResults'] = [];
  while (i >= 0 && messages[i].role === 'tool') {
    toolResults.unshift({ name: messages[i].tool_result!.name, result: messages[i].tool_result!.result });
    i--;
  }
  return { provider, system, messages, lastUserText: lastUser?.text ?? '', toolResults, tools };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c: any) => c.text ?? '').join('');
  return '';
}

function parseMaybe(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
