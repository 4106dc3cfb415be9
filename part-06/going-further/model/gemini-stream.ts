// Streams a Gemini reply: the answer's text is handed out as it arrives, and the chunks are put back together into the one response gemini.ts reads.
import { ApiError, type GenerateContentResponse, type Part } from '@google/genai';
import type { GeminiSettings } from '../../../shared/config.ts';
import { chatRequest, client, fromResponse } from '../../../shared/llm/gemini.ts';
import {
  isPlainObject,
  type ChatResult,
  type Message,
  type ToolDefinition,
} from '../../../shared/llm/messages.ts';
import { answerPieces, brokeOff, guardStream, type StreamOptions } from './stream-guard.ts';

/**
 * Each chunk is a whole GenerateContentResponse holding the next parts; a function call always arrives
 * whole, in one part. The parts are kept in order, each with the thought signature it came with (Gemini 3
 * signs the first call of a batch, and often a last, empty text part), so the result replays verbatim.
 */
export async function geminiStream(
  settings: GeminiSettings,
  messages: Message[],
  tools: ToolDefinition[],
  signal: AbortSignal,
  { onText, stallMs }: Required<Pick<StreamOptions, 'onText' | 'stallMs'>>,
): Promise<ChatResult> {
  // An error sent inside the stream arrives as an ApiError, which geminiError reads like any other.
  const guard = guardStream(signal, stallMs, 'Gemini', (error) =>
    error instanceof ApiError ? error : brokeOff('Gemini', error),
  );
  const stream = await client(settings).models.generateContentStream(
    chatRequest(settings, messages, tools, guard.signal),
  );
  const parts: Part[] = [];
  // The answer is shown and kept only up to its limit (reply-limits.ts).
  const keepAnswer = answerPieces(onText);
  let usageMetadata: GenerateContentResponse['usageMetadata'];
  let complete = false;
  for await (const chunk of guard.chunks(stream)) {
    const candidate = chunk.candidates?.[0];
    const received = candidate?.content?.parts;
    for (const part of Array.isArray(received) ? received.filter(isPlainObject) : []) {
      if (typeof part.text !== 'string' || part.thought) addPart(parts, part);
      else {
        const kept = keepAnswer(part.text);
        // Past the limit, the rest of the answer is dropped (the reply keeps no raw then).
        if (kept || !part.text) addPart(parts, { ...part, text: kept });
      }
    }
    // Each chunk's usage is the running total, so the last one counts.
    usageMetadata = chunk.usageMetadata ?? usageMetadata;
    // `finishReason` says the reply is complete (it is STOP even when the reply holds calls); a blocked
    // prompt ends with promptFeedback instead. The SDK reads the end of a stream the same way. Leaving
    // the loop closes the stream: a server may keep the connection open after its last chunk.
    complete ||= candidate?.finishReason !== undefined || chunk.promptFeedback !== undefined;
    if (complete) break;
  }
  // Without its last chunk a reply may have lost text or calls: using it would act on half an answer.
  if (!complete) throw guard.incomplete();
  return fromResponse({
    candidates: [{ content: parts.length ? { role: 'model', parts } : undefined }],
    usageMetadata,
  });
}

/**
 * Adds a streamed part to the reply. Consecutive plain text parts (no signature, not a thought) are
 * joined, as generateContent sends them; every other part is kept as it came, never merged, even an
 * empty one: Gemini's docs ask for its parts back unchanged, signatures where they were.
 */
function addPart(parts: Part[], part: Part): void {
  const last = parts.at(-1);
  if (last && isPlainText(last) && isPlainText(part)) last.text += part.text!;
  else parts.push(isPlainText(part) ? { text: part.text } : part);
}

function isPlainText(part: Part): boolean {
  return typeof part.text === 'string' && Object.keys(part).length === 1;
}
