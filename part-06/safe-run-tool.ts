// Runs one tool call for the agent loop so that nothing a tool does can crash the loop.
import type { ToolCall } from '../shared/llm/index.ts';
import { runTool, type Tool, type ToolContext, type ToolResult } from './tools.ts';

/** How often the same tool may run with the same arguments within one question. */
const MAX_REPEAT_CALLS = 2;

export const REPEATED_CALL_ERROR = 'You already made this exact call. Use the earlier result.';

/** The result of a call Ctrl-C stopped, or never let start: every call needs a result to be saved. */
export const CANCELLED_CALL_ERROR = 'This call was cancelled before it finished.';

/**
 * Unknown tools and bad arguments already come back from runTool as `{ error }` results. Here we add
 * the two failures runTool cannot see: a model repeating itself, and a tool that throws (a database
 * that went away, a bug). Both become results the model can read and react to.
 */
export async function safeRunTool(
  call: ToolCall,
  callCounts: Map<string, number>,
  context: ToolContext,
  extraTools: Tool[] = [],
): Promise<{ result: ToolResult; exception?: string }> {
  // Same tool, same arguments, in any key order: {"a":1,"b":2} and {"b":2,"a":1} are one call. A call
  // whose arguments could not be read runs nothing and has none to compare (all are {}): it is not
  // counted, so runTool tells the model what was wrong with them, every time.
  if (!call.arguments_error) {
    const key = `${call.name}:${canonicalJson(call.arguments)}`;
    const count = (callCounts.get(key) ?? 0) + 1;
    callCounts.set(key, count);
    if (count > MAX_REPEAT_CALLS) return { result: { error: REPEATED_CALL_ERROR } };
  }
  if (context.signal?.aborted) return { result: { error: CANCELLED_CALL_ERROR } }; // Ctrl-C: none starts

  try {
    return { result: await runTool(call, context, extraTools) };
  } catch (error) {
    if (context.signal?.aborted) return { result: { error: CANCELLED_CALL_ERROR } };
    // The model gets a plain sentence; the technical detail goes to the trace for us.
    const exception = error instanceof Error ? error.message : String(error);
    return {
      result: {
        error: `${call.name} failed because of a technical problem. Apologise and suggest trying again later.`,
      },
      exception,
    };
  }
}

/** JSON with object keys sorted at every level, so equal values always give equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      );
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
