// Streams an OpenAI (or compatible) reply: the answer's text is handed out as it arrives, and the fragments are put back together into the message openai.ts reads.
import { APIError } from 'openai';
import type { OpenAISettings } from '../../../shared/config.ts';
import {
  ProviderError,
  capitalized,
  firstLine,
  kindForStatus,
} from '../../../shared/llm/errors.ts';
import {
  isPlainObject,
  type ChatResult,
  type Message,
  type ToolDefinition,
} from '../../../shared/llm/messages.ts';
import { badResponse, chatRequest, client, fromCompletion } from '../../../shared/llm/openai.ts';
import { openaiProviderName } from '../../../shared/llm/openai-name.ts';
import { MAX_ARGUMENTS_CHARS } from '../../../shared/llm/reply-limits.ts';
import { answerPieces, brokeOff, guardStream, type StreamOptions } from './stream-guard.ts';

/** A tool call while its fragments arrive: the first carries id, type and name, the others more arguments. */
interface CallSoFar {
  index?: number;
  id?: string;
  type?: string;
  name: string;
  arguments: string;
}

/**
 * How long the usage chunk may take once the finish chunk is in. OpenAI sends the two together; a server
 * that sends no usage and keeps the connection open then costs this long, not a whole stall.
 */
const USAGE_WAIT_MS = 1000;

/**
 * The text arrives in `delta.content` pieces; tool calls in fragments keyed by `index`, whose arguments
 * are only JSON once the last fragment is in, so nothing is parsed before the finish chunk. Usage comes
 * last, in a chunk with no choices.
 */
export async function openaiStream(
  settings: OpenAISettings,
  messages: Message[],
  tools: ToolDefinition[],
  signal: AbortSignal,
  { onText, stallMs }: Required<Pick<StreamOptions, 'onText' | 'stallMs'>>,
): Promise<ChatResult> {
  const provider = openaiProviderName(settings);
  const guard = guardStream(
    signal,
    stallMs,
    provider,
    (error) => errorInStream(error, provider) ?? brokeOff(provider, error),
  );
  const stream = await client(settings).chat.completions.create(
    {
      ...chatRequest(settings, messages, tools),
      stream: true,
      // Without it there is no usage at all in a stream.
      stream_options: { include_usage: true },
    },
    { signal: guard.signal },
  );
  const reply = new ReplySoFar(settings, onText);
  let usage: unknown;
  let finished = false;
  // Typed as unknown: a server that only imitates OpenAI may send anything.
  for await (const chunk of guard.chunks<unknown>(stream)) {
    if (!isPlainObject(chunk)) {
      throw reply.problem('streamed a chunk that is not a JSON object');
    }
    if (isPlainObject(chunk.usage)) usage = chunk.usage;
    const choice: unknown = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (isPlainObject(choice)) {
      reply.add(choice);
      finished ||= typeof choice.finish_reason === 'string';
    }
    // Complete: leaving the loop closes the stream. A server may keep the connection open after its
    // last chunk, and waiting for it to close would hold every answer until the stall timer.
    if (finished && usage) break;
    if (finished) guard.endsWithin(USAGE_WAIT_MS);
  }
  // Without its finish chunk a reply may have lost text, calls or the end of their arguments. A stream
  // cancelled by Ctrl-C or the deadline ends here too (the openai SDK ends it quietly, as if complete);
  // withRetries then reports which of them it was.
  if (!finished) throw guard.incomplete();
  return fromCompletion({ choices: [{ index: 0, message: reply.message() }], usage }, settings);
}

/** The reply while its chunks arrive: text shown as it comes, calls put back together from fragments. */
class ReplySoFar {
  private content: string | undefined;
  private refusal: string | undefined;
  private readonly calls: CallSoFar[] = [];
  // Shown and kept only up to the answer's limit (reply-limits.ts); a refusal is the answer when it comes.
  private readonly keepContent: (piece: string) => string;
  private readonly keepRefusal: (piece: string) => string;

  constructor(
    private readonly settings: OpenAISettings,
    onText: (text: string) => void,
  ) {
    this.keepContent = answerPieces(onText);
    this.keepRefusal = answerPieces(onText);
  }

  add(choice: Record<string, unknown>): void {
    const delta = isPlainObject(choice.delta) ? choice.delta : {};
    this.content = this.addText(this.content, delta.content, this.keepContent);
    // A refusal is the reply's text when there is no content (openai.ts reads it so); it comes instead.
    this.refusal = this.addText(this.refusal, delta.refusal, this.keepRefusal);
    for (const fragment of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const problem = addFragment(this.calls, fragment);
      if (problem)
        throw this.problem(`streamed tool calls that cannot be put back together: ${problem}`);
    }
  }

  /** The message as the API sends it without streaming, for openai.ts to read. */
  message(): Record<string, unknown> {
    const { content, refusal, calls } = this;
    return {
      role: 'assistant',
      // As the API sends it without streaming: null when the reply is only tool calls, or a refusal.
      content: content || (calls.length || refusal ? null : ''),
      ...(refusal === undefined ? {} : { refusal }),
      ...(calls.length
        ? {
            tool_calls: calls.map((call) => ({
              ...(call.id ? { id: call.id } : {}),
              // vLLM has left `type` out; a function call is the only kind a fragment with a name can be.
              type: call.type ?? 'function',
              function: { name: call.name, arguments: call.arguments },
            })),
          }
        : {}),
    };
  }

  /** A stream that cannot be read as a reply: "<Provider> <what>." */
  problem(what: string): ProviderError {
    const Provider = capitalized(openaiProviderName(this.settings));
    return badResponse(this.settings, `${Provider} ${what}.`);
  }

  /** Adds a piece of text to what came so far, and shows what `keep` lets through. */
  private addText(
    soFar: string | undefined,
    piece: unknown,
    keep: (piece: string) => string,
  ): string | undefined {
    if (piece === undefined || piece === null) return soFar;
    if (typeof piece !== 'string') throw this.problem(`streamed text of type ${typeof piece}`);
    return (soFar ?? '') + keep(piece);
  }
}

/**
 * Adds one tool-call fragment to the calls so far, or says why it cannot be placed. OpenAI keys fragments
 * by `index`; compatible servers differ, and what is unambiguous is handled:
 * - a new id on an index that holds another id starts a new call (Ollama has reused index 0 for a batch);
 * - without an index, a fragment continues the last call when it has the same id or none, and a new id
 *   starts a new call; with neither index nor id, only a single call is unambiguous (Ollama has left
 *   the index out).
 * Anything else could glue one call's arguments to another's, and a wrong call is worse than none.
 */
function addFragment(calls: CallSoFar[], fragment: unknown): string | undefined {
  if (!isPlainObject(fragment)) return 'a fragment that is not an object';
  const index = typeof fragment.index === 'number' ? fragment.index : undefined;
  const id = typeof fragment.id === 'string' && fragment.id ? fragment.id : undefined;
  const current =
    index === undefined ? calls.at(-1) : calls.findLast((call) => call.index === index);
  let call: CallSoFar;
  if (!current || (id && current.id && id !== current.id)) {
    call = { index, id, name: '', arguments: '' };
    calls.push(call);
  } else if (index === undefined && !id && calls.length > 1) {
    return `a fragment with neither index nor id, after ${calls.length} calls`;
  } else {
    call = current;
  }
  call.id ??= id;
  if (typeof fragment.type === 'string') call.type ??= fragment.type;
  const fn = isPlainObject(fragment.function) ? fragment.function : {};
  if (typeof fn.name === 'string' && fn.name) {
    // Some servers repeat the name on every fragment; a different one means two calls were mixed up.
    if (call.name && call.name !== fn.name)
      return `one call named both ${call.name} and ${fn.name}`;
    call.name = fn.name;
  }
  // Kept up to one character past the limit: enough for openai.ts to refuse the call (reply-limits.ts).
  if (typeof fn.arguments === 'string')
    call.arguments += fn.arguments.slice(0, MAX_ARGUMENTS_CHARS + 1 - call.arguments.length);
  else if (fn.arguments !== undefined && fn.arguments !== null)
    return 'arguments that are not text';
  return undefined;
}

/**
 * An error object sent inside the stream. The openai SDK throws it as an APIError without a status (the
 * answer itself was a 200), which openaiError would take for a server it could not reach.
 */
function errorInStream(error: unknown, provider: string): ProviderError | undefined {
  if (!(error instanceof APIError) || error.status !== undefined || !isPlainObject(error.error))
    return undefined;
  const code = error.error.code;
  const text =
    typeof error.error.message === 'string' ? firstLine(error.error.message) : error.message;
  return new ProviderError({
    provider,
    // It failed after accepting the request, so it is the server's trouble, unless an HTTP-like code
    // (vLLM sends one) says otherwise.
    kind: typeof code === 'number' ? kindForStatus(code) : 'server',
    message: `${capitalized(provider)} sent an error in the middle of its reply: ${text}`,
    cause: error,
  });
}
