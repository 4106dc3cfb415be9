// What the fake server asks of one provider's wire format, so the server itself has no provider branches.
import type { ProviderName } from '../config.ts';
import type { ChatView, ScriptedError, ScriptedReply, ViewMessage } from './fake-script.ts';

/** An endpoint of the provider. Gemini names the model in the path; OpenAI in the body (`model` undefined). */
interface FakeRoute {
  kind: 'chat' | 'embed';
  model?: string;
}

/**
 * A scripted reply ready to render: its text joined, with the chunks it streams in, and its token counts
 * (estimated when not scripted; none when the script says 'none').
 */
export type ReplyToRender = Omit<ScriptedReply, 'text' | 'usage'> & {
  text?: string;
  textChunks: string[];
  usage?: { input: number; output: number };
};

/** One provider's side of the fake: fake-gemini.ts and fake-openai.ts implement it. */
export interface FakeWire {
  /** Where a POST to `path` goes, or undefined when this provider has no such endpoint. */
  route(path: string): FakeRoute | undefined;
  /** Why the real API would answer 400 to this chat request, in its words; undefined when it would accept it. */
  rejection(body: any): string | undefined;
  /** The chat request read into provider-neutral terms (only called once `rejection` found nothing). */
  view(body: any): ChatView;
  /** Whether a chat request asks for a streamed reply: Gemini says so in the path, OpenAI in the body. */
  streamed(path: string, body: any): boolean;
  /** The 200 body answering a chat request with a scripted reply (its usage filled in); `counter` numbers the replies. */
  render(reply: ReplyToRender, model: string, counter: number): unknown;
  /** The events that stream `whole` (what `render` returned), one chunk each, in the order the API sends them. */
  chunks(whole: any, reply: ReplyToRender, body: any): unknown[];
  /** Whether an event carries what the model writes (text, a call): only those take time when paced. */
  written(event: unknown): boolean;
  /** The 200 body answering an embeddings request. */
  embeddings(body: any, model: string): unknown;
  /** An error body in the provider's own shape. */
  error(error: ScriptedError): unknown;
}

/** Vector size when a request names none (the real models have their own defaults). */
export const DEFAULT_DIMENSIONS = 256;

/** Completes a view from the messages: the customer's last words and the tool results this request answers. */
export function chatView(
  provider: ProviderName,
  system: string,
  messages: ViewMessage[],
  tools: string[],
): ChatView {
  const lastUser = messages.findLast((m) => m.role === 'user');
  const toolResults: ChatView['toolResults'] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) {
    toolResults.unshift({
      name: messages[i].tool_result!.name,
      result: messages[i].tool_result!.result,
    });
  }
  return { provider, system, messages, lastUserText: lastUser?.text ?? '', toolResults, tools };
}

/** The message of a scripted error that gives none: what the real APIs say for the common statuses. */
export function defaultErrorMessage(status: number): string {
  if (status === 401) return 'Incorrect API key provided.';
  if (status === 429)
    return 'You exceeded your current quota, please check your plan and billing details.';
  if (status === 503) return 'The model is overloaded. Please try again later.';
  return `Fake error ${status}`;
}
