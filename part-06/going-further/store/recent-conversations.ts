// The list of recent conversations the operator's viewer starts from, with whose each is.
import { query } from '../../../shared/db.ts';
import { oneLine, shorten } from '../../../shared/text.ts';
import { minute, safeLine } from '../../../shared/text.ts';
import { SUMMARIES, type ConversationSummary } from '../../stored-conversations.ts';

/** The most recently used conversations, with each one's first question. */
export async function listConversations(
  limit = 20,
): Promise<Array<ConversationSummary & { first_question: string | null }>> {
  const first = `SELECT JSON_UNQUOTE(JSON_EXTRACT(m.data, '$.content')) FROM messages m
                  WHERE m.conversation_id = s.id AND m.role = 'user' ORDER BY m.seq LIMIT 1`;
  return query(
    `SELECT s.*, (${first}) AS first_question FROM (${SUMMARIES}) s ORDER BY s.updated_at DESC, s.id LIMIT ?`,
    [limit],
  );
}

/** Recent conversations, newest first, one line each, with whose they are. */
export function listView(
  conversations: Array<ConversationSummary & { first_question: string | null }>,
): string[] {
  return [
    'Recent conversations (newest first):',
    ...conversations.map((c) => {
      const first = shorten(oneLine(c.first_question ?? ''), 60);
      return `  ${c.id}  ${minute(c.updated_at)}  ${safeLine(c.customer_email).padEnd(28)} ${String(c.messages).padStart(4)} messages  ${safeLine(first)}`;
    }),
  ];
}
