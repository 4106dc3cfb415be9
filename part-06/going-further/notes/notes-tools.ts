// The tools that carry a customer's wishes across conversations: remember_note and search_past_conversations (forgetting is privacy/'s).
//
// Like every tool, they act for the signed-in customer alone: it arrives in `context`, from our code,
// and none of them takes a customer from the model. Another customer's note or conversation looks
// exactly like one that does not exist.
import { wellFormed } from '../../../shared/text.ts';
import type { Tool, ToolContext, ToolResult } from '../../tools.ts';
import {
  MAX_NOTE_CHARS,
  MAX_NOTES_PER_CUSTOMER,
  saveNote,
  type SaveOutcome,
} from './notes-queries.ts';
import { searchPastConversations } from './past-conversations.ts';

/** Notes one question may keep: a customer states a wish or two; a model looping on the tool stops here. */
export const MAX_NOTES_PER_QUESTION = 3;
/** The longest search: a few words, not a pasted conversation. */
const MAX_QUERY_CHARS = 200;

/** The two tools, for runAgent's `tools`. */
export function customerMemoryTools(): Tool[] {
  return [rememberNoteTool(), searchPastTool()];
}

function rememberNoteTool(): Tool {
  // Notes kept per question. runAgent makes one ToolContext per question, so it is the key.
  const kept = new WeakMap<ToolContext, number>();
  return {
    definition: {
      name: 'remember_note',
      description:
        'Keep a note for later conversations, ONLY when the customer explicitly asks you to remember something ' +
        '("remember that…", "please note…"): a preference or a circumstance, as one short sentence in their words. ' +
        'Never for orders, refunds or tickets: the other tools always fetch those fresh. Saying the same thing ' +
        'again keeps one note (one that had expired is revived). Returns the note id.',
      parameters: {
        type: 'object',
        properties: {
          text: {
            type: 'string',
            description: `The note, at most ${MAX_NOTE_CHARS} characters, e.g. "Contact me by email, never by phone."`,
          },
          expires_on: {
            type: 'string',
            description:
              'The last day it applies, YYYY-MM-DD, only if the customer gave one ("I\'m away until the 20th"). ' +
              'If you are not sure which date they mean, ask.',
          },
        },
        required: ['text'],
        additionalProperties: false,
      },
    },
    async run(args, context) {
      // One line, spaces tidied: the same words written twice are one note (the column ignores case).
      const text =
        typeof args.text === 'string' ? wellFormed(args.text).replace(/\s+/g, ' ').trim() : '';
      if (!text)
        return { error: 'text must be a non-empty sentence: what the customer asked you to keep.' };
      if (text.length > MAX_NOTE_CHARS)
        return { error: `text must be at most ${MAX_NOTE_CHARS} characters; keep the gist.` };
      const expiresOn = args.expires_on ?? null;
      if (expiresOn !== null && !isDate(expiresOn))
        return {
          error: `expires_on must be a date as YYYY-MM-DD (got ${JSON.stringify(expiresOn)}).`,
        };
      if ((kept.get(context) ?? 0) >= MAX_NOTES_PER_QUESTION)
        return {
          error: `No more than ${MAX_NOTES_PER_QUESTION} notes can be kept for one question.`,
        };

      const { customer, conversation } = context;
      const saved = await saveNote(customer.id, conversation.id, text, expiresOn);
      if (saved.outcome === 'saved' || saved.outcome === 'revived')
        kept.set(context, (kept.get(context) ?? 0) + 1);
      return noteResult(saved, expiresOn);
    },
  };
}

/** What remember_note says about a save: each outcome as it is, for the model to tell the customer. */
function noteResult(saved: SaveOutcome, expiresOn: string | null): ToolResult {
  switch (saved.outcome) {
    case 'past':
      return {
        error: `expires_on ${expiresOn} is in the past (today is ${saved.today}). Ask the customer which date they mean.`,
      };
    case 'full':
      return {
        error: `The customer already keeps ${MAX_NOTES_PER_CUSTOMER} notes. Ask which one to forget first (forget_notes).`,
      };
    case 'erased':
      return {
        error:
          'Not kept: this conversation was erased while you were answering (a request to delete data), so nothing more is written for it.',
      };
    case 'repeated':
      return { saved: false, already_noted: true, note_id: saved.id, expires_on: expiresOn };
    case 'revived':
      return { saved: true, revived: true, note_id: saved.id, expires_on: expiresOn };
    case 'saved':
      return { saved: true, note_id: saved.id, expires_on: expiresOn };
  }
}

function searchPastTool(): Tool {
  return {
    definition: {
      name: 'search_past_conversations',
      description:
        "Search the signed-in customer's earlier conversations with you by words, when they refer to something " +
        'discussed before ("what did we say about…"). Returns matching conversations with their id, date and ' +
        'the matching lines. For orders and tickets use the other tools: they are always current.',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'The words to look for.' } },
        required: ['query'],
        additionalProperties: false,
      },
    },
    async run(args, context): Promise<ToolResult> {
      const words = typeof args.query === 'string' ? args.query.trim() : '';
      if (!words) return { error: 'query must be a non-empty text.' };
      if (words.length > MAX_QUERY_CHARS)
        return { error: `query must be at most ${MAX_QUERY_CHARS} characters.` };
      const conversations = await searchPastConversations(
        context.customer.id,
        words,
        context.conversation.id,
      );
      return conversations.length
        ? { conversations }
        : { conversations, note: 'No earlier conversation of this customer matches.' };
    },
  };
}

/** A real calendar date written YYYY-MM-DD: 2026-02-30 is not one. */
function isDate(value: unknown): value is string {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}
