// What one question's model replies may ask for: tool calls per reply, help-center searches per question, and how much of a step's results is sent back. A model can ask for thousands of calls in one reply.
import { integerSetting, type Env } from '../../../shared/config.ts';
import type { AssistantMessage, ToolCall } from '../../../shared/llm/index.ts';
import type { AgentOptions } from '../../agent.ts';
import { fitResults } from '../store/fit-results.ts';

type CallModel = NonNullable<AgentOptions['callModel']>;

/**
 * Tool calls one reply may have run (MAX_TOOL_CALLS_PER_REPLY in .env). A real question needs one to
 * three at a time (an order, its refund check, a search); 16 leaves room for "all my orders" and keeps a
 * step's results within the memory budget.
 */
export const DEFAULT_MAX_TOOL_CALLS = 16;

/**
 * Searches one question may make, of the help center (with an index each is a paid embedding request)
 * and of past conversations (each returns up to three conversations' lines). A question needs one or
 * two; the repeat guard already refuses the same search a third time, this any search.
 */
export const MAX_SEARCHES_PER_QUESTION = 4;
const SEARCH_TOOLS = ['search_help_center', 'search_past_conversations'];

/** Read once at start, by the entry script. */
export function maxToolCallsPerReply(env: Env): number {
  return integerSetting('MAX_TOOL_CALLS_PER_REPLY', DEFAULT_MAX_TOOL_CALLS, 1, { max: 1_000, env });
}

/** What one question's replies may ask for: calls per reply, and characters of their results sent. */
export interface CallLimits {
  /** MAX_TOOL_CALLS_PER_REPLY */
  maxCalls: number;
  /** The memory budget's characters (MEMORY_MAX_CHARS): a step's results are sent within it. */
  maxResultChars: number;
}

/** What the model reads instead of the result of the first call past the limit, which stands for the rest. */
export function tooManyCalls(asked: number, max: number): string {
  const rest = asked - max - 1;
  const others = rest === 0 ? '' : ` and the ${rest.toLocaleString('en-US')} after it`;
  return (
    `This reply asked for ${asked.toLocaleString('en-US')} tool calls, and at most ${max} run per reply: ` +
    `the first ${max} ran, this one${others} did not. Ask again for what you still need, at most ${max} at a time.`
  );
}

/** Said instead of running forget_everything beside other calls of the same reply. */
export const FORGET_ALONE =
  'forget_everything was not run: call it alone, in a reply of its own, once the customer has confirmed. The other calls of this reply ran.';

/** Said instead of running a search past the question's limit. */
export function searchLimitError(tool: string): string {
  const what = tool === 'search_help_center' ? 'help-center' : 'past-conversation';
  return `No more than ${MAX_SEARCHES_PER_QUESTION} ${what} searches can be made for one question, so this one was not run. Answer with what was already found.`;
}

/**
 * The agent's model call (`callModel`) for one question, bounded. A reply's calls past `maxCalls` are
 * left out, but for the first of them, kept to tell the model in its result what was not run; a call
 * over the question's searches is kept and not run. A call not to be run carries why in
 * `arguments_error`, as the provider layer marks a call whose arguments are too long: runTool answers
 * it with that sentence and runs nothing. Every call kept gets its result, so the next request is valid
 * for both providers, and it holds at most `maxCalls + 1` calls of this reply, whose results are sent
 * within `maxResultChars` (the memory budget) all together (see fitResults).
 */
export function withCallLimits(
  callModel: CallModel,
  { maxCalls, maxResultChars }: CallLimits,
): CallModel {
  const searches = new Map<string, number>();
  return async (llm, messages, ...rest) => {
    const reply = await callModel(llm, fitResults(messages, maxResultChars), ...rest);
    const asked = reply.tool_calls.length;
    const calls = reply.tool_calls.slice(0, maxCalls + 1).map((call, i): ToolCall => {
      if (i === maxCalls) return { ...call, arguments_error: tooManyCalls(asked, maxCalls) };
      if (!SEARCH_TOOLS.includes(call.name) || call.arguments_error) return call;
      const made = (searches.get(call.name) ?? 0) + 1;
      searches.set(call.name, made);
      return made > MAX_SEARCHES_PER_QUESTION
        ? { ...call, arguments_error: searchLimitError(call.name) }
        : call;
    });
    // forget_everything erases all before it; what a call beside it returned would be kept after it.
    const alone = calls.length === 1;
    for (const [i, call] of calls.entries())
      if (call.name === 'forget_everything' && !alone && !call.arguments_error)
        calls[i] = { ...call, arguments_error: FORGET_ALONE };
    const cut = asked > calls.length;
    if (!cut && calls.every((call, i) => call === reply.tool_calls[i])) return reply;
    // The provider's own message holds every call it sent: with calls left out it would replay them,
    // so it is dropped, as for a reply that was cut. A marked call leaves it agreeing (provider-raw.ts).
    const message: AssistantMessage = cut
      ? { role: 'assistant', content: reply.message.content, tool_calls: calls }
      : { ...reply.message, tool_calls: calls };
    return { ...reply, tool_calls: calls, message };
  };
}
