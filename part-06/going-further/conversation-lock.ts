// Going further: one question at a time per conversation, across windows and processes.
//
// A turn is saved step by step, so two questions answered at once in one conversation would put
// their steps side by side. This lock makes the second wait for the first, and then it sees the
// first's whole turn in its history. The lock belongs to a database connection: a killed process
// releases it by itself, but so does a dropped connection, so the store checks its place in the
// conversation on every save as well (hardened-store.ts).
import type { Connection } from 'mysql2/promise';
import { DatabaseError, LockBusy, withNamedLock, type LockOptions } from '../../shared/db.ts';

/** How long a question waits for another window's question in the same conversation. */
export const CONVERSATION_WAIT_SECONDS = 30;

/** What to tell the person whose question waits (onWait), so a pause is never silent. */
export const WAITING_FOR_OTHER_QUESTION = `(Waiting for the question another window is asking in this conversation to finish, up to ${CONVERSATION_WAIT_SECONDS} s…)`;

/** Another process is answering in this conversation, and did not finish within the wait. */
export class ConversationBusy extends DatabaseError {
  override name = 'ConversationBusy';
  constructor(conversationId: string, seconds: number) {
    super(
      `Conversation ${conversationId} has been busy answering a question elsewhere for ${seconds} s; ask again when it has finished.`,
    );
  }
}

/**
 * Runs fn while no other process answers in this conversation; `onWait` is told when it has to wait.
 * Ctrl-C while waiting (`signal`) throws DatabaseCancelled: nothing of the question was done.
 */
export async function withConversationLock<T>(
  conversationId: string,
  fn: () => Promise<T>,
  options: LockOptions & { waitSeconds?: number } = {},
): Promise<T> {
  const waitSeconds = options.waitSeconds ?? CONVERSATION_WAIT_SECONDS;
  try {
    return await withNamedLock(lockName(conversationId), waitSeconds, fn, options);
  } catch (error) {
    if (error instanceof LockBusy) throw new ConversationBusy(conversationId, waitSeconds);
    throw error;
  }
}

/**
 * Takes the lock of every one of these conversations on one connection (a reset holds them while
 * it drops the tables), waiting for questions in progress to finish. Closing the connection
 * releases them all.
 */
export async function lockConversations(db: Connection, conversationIds: string[]): Promise<void> {
  for (const id of conversationIds) {
    const [rows] = await db.query<Array<{ got: number | null } & import('mysql2').RowDataPacket>>(
      'SELECT GET_LOCK(?, ?) AS got',
      [lockName(id), CONVERSATION_WAIT_SECONDS],
    );
    if (rows[0].got !== 1) throw new ConversationBusy(id, CONVERSATION_WAIT_SECONDS);
  }
}

function lockName(conversationId: string): string {
  return `nimbus-conversation:${conversationId}`;
}
