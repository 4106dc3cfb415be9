// The tools that erase what a customer asked Nimbus to keep: forget_notes, and forget_everything, her whole history.
//
// Like every tool, they act for the signed-in customer alone: it arrives in `context`, from our code,
// and neither takes a customer from the model. They belong to privacy/ (what deleting means: every
// copy, trace files included), so the notes never need to know about erasure.
import type { Tool } from '../../tools.ts';
import { forgetCustomer } from './delete-conversations.ts';
import { forgetNotes } from './delete-notes.ts';

/**
 * The two tools, for runAgent's `tools`: they also delete trace lines and files under `logDir`.
 * `afterErasure`: forget_everything erased this question's own conversation too, up to this question.
 */
export function privacyTools(logDir: string, afterErasure: () => void): Tool[] {
  return [forgetNotesTool(logDir), forgetEverythingTool(logDir, afterErasure)];
}

function forgetNotesTool(logDir: string): Tool {
  return {
    definition: {
      name: 'forget_notes',
      description:
        "Delete the customer's notes when they ask you to forget something: one note by its id (from the " +
        'customer notes you were given), or all of them. Their earlier conversations stay: when they ask you to ' +
        'forget everything about them, use forget_everything instead. Returns how many notes were deleted.',
      parameters: {
        type: 'object',
        properties: {
          note_id: { type: 'integer', description: 'The note to forget, e.g. 12.' },
          all: { type: 'boolean', description: 'true to forget every note of this customer.' },
        },
        additionalProperties: false,
      },
    },
    async run(args, context) {
      if ((args.note_id === undefined) === (args.all !== true))
        return { error: 'Give either note_id or all: true.' };
      // Models sometimes send "12" for 12.
      const noteId = /^\d{1,9}$/.test(String(args.note_id)) ? Number(args.note_id) : undefined;
      if (args.note_id !== undefined && !noteId)
        return {
          error: `note_id must be a positive whole number (got ${JSON.stringify(args.note_id)}).`,
        };
      // A question's writes check its lease (store/fence.ts): one whose lease was taken deletes nothing.
      const forgotten = await forgetNotes(logDir, context.customer.id, noteId ? [noteId] : 'all');
      if (noteId && forgotten.length === 0) return { error: `Note ${noteId} not found` };
      if (noteId) return { forgotten: forgotten.length };
      return {
        forgotten: forgotten.length,
        still_kept:
          'Their earlier conversations with you, which search_past_conversations still finds. Say so; forget_everything deletes them too.',
      };
    },
  };
}

function forgetEverythingTool(logDir: string, afterErasure: () => void): Tool {
  return {
    definition: {
      name: 'forget_everything',
      description:
        'Delete everything you keep about the customer, when they ask you to forget everything about them or to ' +
        'delete their data: all their notes and all their conversations with you, this one included, with their ' +
        "logs. Their orders, refunds and support tickets are the store's records and stay: the result lists the " +
        'tickets; tell the customer exactly what was deleted and what stays. Make sure that is what they want first.',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
    },
    async run(_args, context) {
      const here = context.conversation.id;
      // Everything said before this question goes, this conversation's earlier turns included; the
      // question asking keeps its lease, so the answer it is writing is given and kept.
      const erased = await forgetCustomer(logDir, context.customer.id, here);
      afterErasure();
      const tickets = erased.tickets.map((id) => `#${id}`).join(', ');
      return {
        deleted: {
          notes: erased.notes,
          earlier_conversations: erased.conversations.filter((c) => c.conversationId !== here)
            .length,
          this_conversation_until_now: true,
        },
        kept: `Their orders and refunds${tickets ? ` and support tickets ${tickets}` : ''}: the store's records, which it must keep.`,
        note: 'This conversation starts afresh: this request and your answer to it are all it keeps. Do not repeat anything said before it: that is erased.',
      };
    },
  };
}
