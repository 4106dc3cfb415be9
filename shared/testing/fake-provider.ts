// A real HTTP server on 127.0.0.1 that speaks Gemini's and OpenAI's wire formats, so tests run the real SDKs.
//
// Tests queue the model's replies (text, tool calls, errors), read back every request, and rely on the
// server to reject what the real APIs reject: a tool call without its result, a result without its
// call, and on Gemini a current-turn function call that lost its thought signature. A reply is sent
// whole or, when the request asks for a stream, as server-sent events the way each API streams it.
// This file is the server and the queue; each wire format lives in its own file (fake-gemini.ts, fake-openai.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LlmSettings, ProviderName } from '../config.ts';
import { geminiWire } from './fake-gemini.ts';
import { openaiWire } from './fake-openai.ts';
import type { ChatView, Reply, ScriptedStream } from './fake-script.ts';
import type { FakeWire, ReplyToRender } from './fake-wire.ts';

export type { ProviderName };

export type {
  ChatView,
  OpenAIQuirk,
  Reply,
  ScriptedError,
  ScriptedReply,
  ViewMessage,
} from './fake-script.ts';

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
  /** True when the client hung up before we answered (e.g. Ctrl-C), or we cut a stream. */
  aborted: boolean;
  /** True when the request asked for a streamed reply. */
  stream: boolean;
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
  /** Embedding requests wait for `gate` before they are answered, from now on; without one, at once. */
  holdEmbeddings(gate?: Promise<unknown>): void;
  /** Replies not used yet. */
  pending(): number;
  /** Resolves when the n-th chat request (1-based) has arrived. */
  waitForChat(n: number): Promise<ReceivedRequest>;
  /** Environment variables that point a script (a subprocess) at this server for one provider. */
  env(provider: ProviderName): Record<string, string>;
  /** The settings that point in-process code at this server: what llmSettings() reads from env(provider). */
  llm(provider: ProviderName, timeoutMs?: number): LlmSettings;
  close(): Promise<void>;
}

export const FAKE_EMBEDDING_MODEL = 'fake-embedding-001';

/** Settings for code under test that must never call a model: a provider where nothing listens. */
export const NO_PROVIDER: LlmSettings = {
  provider: 'gemini',
  apiKey: 'unused',
  model: 'unused',
  embeddingModel: 'unused',
  baseUrl: 'http://127.0.0.1:9',
  timeoutMs: 1000,
};

export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const wires: Record<ProviderName, FakeWire> = {
    gemini: geminiWire({ signatures: options.signatures ?? true, ids: options.geminiIds ?? false }),
    openai: openaiWire(),
  };
  const queue: Reply[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters: Array<{ n: number; resolve: (r: ReceivedRequest) => void }> = [];
  let counter = 0;
  let embeddingGate: Promise<unknown> | undefined;

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
    const found = req.method === 'POST' ? findRoute(wires, url.pathname) : undefined;
    if (!found)
      return send(res, 404, {
        error: { code: 404, message: `No fake route for ${req.method} ${url.pathname}` },
      });
    const { provider, wire, route } = found;
    let body: any;
    try {
      body = JSON.parse(rawBody || '{}');
    } catch {
      return send(res, 400, wire.error({ status: 400, message: 'Invalid JSON payload received.' }));
    }

    const record: ReceivedRequest = {
      provider,
      kind: route.kind,
      path: url.pathname,
      headers: req.headers,
      body,
      status: 0,
      aborted: false,
      stream: route.kind === 'chat' && wire.streamed(url.pathname, body),
    };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });
    const model = route.model ?? String(body.model);

    if (route.kind === 'embed') {
      if (embeddingGate) await embeddingGate;
      if (record.aborted) return;
      record.status = 200;
      return send(res, 200, wire.embeddings(body, model));
    }

    // A chat request: reject it as the real API would, or answer with the next scripted reply.
    const problem = wire.rejection(body);
    if (problem) {
      record.status = 400;
      record.rejection = problem;
      notifyWaiters();
      return send(res, 400, wire.error({ status: 400, message: problem }));
    }
    record.view = wire.view(body);
    notifyWaiters();

    const next: Reply =
      queue.shift() ??
      options.fallback ??
      ((view) => ({ text: `(fake model) You asked: ${view.lastUserText}` }));
    const reply = typeof next === 'function' ? next(record.view) : next;
    if (reply.gate) await reply.gate;
    if (record.aborted) return;
    if (reply.error) {
      record.status = reply.error.status;
      // retry-after is plain HTTP, the same for every provider.
      const headers: Record<string, string> = reply.error.retryAfter
        ? { 'retry-after': reply.error.retryAfter }
        : {};
      return send(res, reply.error.status, wire.error(reply.error), headers);
    }
    record.status = 200;
    counter++;
    if (reply.body !== undefined) return send(res, 200, reply.body);
    // One rendering, sent whole or split into chunks: the same content either way.
    const text = Array.isArray(reply.text) ? reply.text.join('') : reply.text;
    const ready: ReplyToRender = {
      ...reply,
      text,
      textChunks: Array.isArray(reply.text) ? reply.text : text === undefined ? [] : [text],
      usage:
        reply.usage === 'none'
          ? undefined
          : (reply.usage ??
            estimatedUsage(rawBody, (text ?? '') + JSON.stringify(reply.tool_calls ?? []))),
    };
    const whole = wire.render(ready, model, counter);
    const events = reply.stream?.events ?? wire.chunks(whole, ready, body);
    if (record.stream) return sendStream(res, events, reply.stream, wire);
    // A paced whole reply takes as long as its stream would: a model writes it either way.
    const written = events.filter((event) => wire.written(event)).length;
    if (reply.stream?.paceMs) await sleep(reply.stream.paceMs * Math.max(0, written - 1));
    send(res, 200, whole);
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    chats,
    reply: (...replies) => queue.push(...replies),
    holdEmbeddings: (gate) => (embeddingGate = gate),
    pending: () => queue.length,
    waitForChat: (n) =>
      new Promise((resolve) => {
        waiters.push({ n, resolve });
        notifyWaiters();
      }),
    env: (provider) => envFor(provider, url),
    llm: (provider, timeoutMs = 120_000) => settingsFor(provider, url, timeoutMs),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every provider variable set explicitly, so a developer's own .env cannot leak into a test. */
function envFor(provider: ProviderName, url: string): Record<string, string> {
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

function settingsFor(provider: ProviderName, url: string, timeoutMs: number): LlmSettings {
  const shared = { apiKey: 'test-key', embeddingModel: FAKE_EMBEDDING_MODEL, timeoutMs };
  return provider === 'gemini'
    ? { provider, model: 'gemini-fake', baseUrl: url, ...shared }
    : { provider, model: 'gpt-fake', baseUrl: `${url}/v1`, ...shared };
}

function findRoute(wires: Record<ProviderName, FakeWire>, path: string) {
  for (const [provider, wire] of Object.entries(wires) as Array<[ProviderName, FakeWire]>) {
    const route = wire.route(path);
    if (route) return { provider, wire, route };
  }
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

/** Sends a streamed reply as server-sent events, `data: <json>` each, with the scripted pacing and fault. */
async function sendStream(
  res: http.ServerResponse,
  events: unknown[],
  script: ScriptedStream = {},
  wire: FakeWire,
): Promise<void> {
  // The headers go out at once, before the first chunk, as a streaming API sends them.
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  // Each event is handed to the network before the next step, so a connection cut after it still delivers it.
  const write = (event: unknown) =>
    new Promise<void>((resolve) =>
      res.write(`data: ${typeof event === 'string' ? event : JSON.stringify(event)}\n\n`, () =>
        resolve(),
      ),
    );
  const { fault, paceMs } = script;
  const startedAt = Date.now();
  let written = 0;
  for (let sent = 0; sent <= events.length; sent++) {
    if (fault?.after === sent) {
      if ('drop' in fault) return void res.destroy();
      if ('error' in fault) {
        await write(wire.error(fault.error));
        return void res.end();
      }
      await fault.stall;
    }
    if (sent === events.length) break;
    // Each written chunk at its time from the start: timers run late, and a delay per chunk would add that up.
    if (paceMs && wire.written(events[sent]))
      await sleep(Math.max(0, startedAt + written++ * paceMs - Date.now()));
    // The client went away (Ctrl-C, or it gave up on a stall): stop writing.
    if (res.destroyed) return;
    await write(events[sent]);
  }
  res.end();
}

/** A string payload goes out as it is (a scripted body that is not JSON); anything else as JSON. */
function send(
  res: http.ServerResponse,
  status: number,
  payload: unknown,
  headers: Record<string, string> = {},
) {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
}

/**
 * Token counts when a test scripts none: about four characters per token, the usual rule of thumb for
 * English and JSON, so characters-per-token figures computed from the fake look like real ones.
 */
function estimatedUsage(requestBody: string, written: string): { input: number; output: number } {
  return { input: Math.ceil(requestBody.length / 4), output: Math.ceil(written.length / 4) };
}
