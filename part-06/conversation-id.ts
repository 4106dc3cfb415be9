// Checks a conversation id typed by a user (--resume=, --conversation=, …) before it goes anywhere near the database.
import { UsageError } from '../shared/cli.ts';
import { printable } from '../shared/text.ts';

/** The id, if it is 32 lowercase hex characters (what newConversation makes); else a usage error naming `where`. */
export function conversationId(value: string, where: string): string {
  if (/^[0-9a-f]{32}$/.test(value)) return value;
  const shown = printable(value, { singleLine: true });
  throw new UsageError(
    `${where} needs a conversation id: 32 lowercase hex characters (got "${shown}").`,
  );
}
