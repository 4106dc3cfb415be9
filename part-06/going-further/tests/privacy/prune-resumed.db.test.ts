// A conversation a chat resumed counts as in use for prune.ts (issue 42, item 9): older than --days before, it stays, and her next question goes on in it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import type { ScratchDatabase } from '../../../../shared/testing/database.ts';
import { type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../../../shared/testing/run-in-process.ts';
import { findConversation } from '../../../memory.ts';
import type { Customer } from '../../../session.ts';
import { fullSession } from '../full-session.ts';
import { newCustomer } from '../new-customer.ts';
import { closeTestBed, openTestBed } from '../test-bed.ts';

const CHAT = 'part-06/going-further/chat.ts';
const PRUNE = 'part-06/going-further/prune.ts';
let fake: FakeProvider;
let db: ScratchDatabase;
let logs: string;

beforeAll(async () => ({ fake, db, logs } = await openTestBed('prune-resumed')));
afterAll(() => closeTestBed({ fake, db, logs }));

const env = () => ({ ...fake.env('gemini'), DB_NAME: db.name, LOG_DIR: logs });

/** A conversation of hers with one turn, last used `days` days ago. */
async function conversationUsed(customer: Customer, days: number): Promise<string> {
  const session = fullSession(customer, fake.llm('gemini'), undefined, { logDir: logs });
  fake.reply({ text: 'Hello!' });
  await session.ask('Hi');
  const id = session.conversation.id;
  await query('UPDATE conversations SET updated_at = NOW(3) - INTERVAL ? DAY WHERE id = ?', [
    days,
    id,
  ]);
  return id;
}

describe('prune.ts --days=5', () => {
  it('leaves alone a conversation older than that which a chat has just resumed, and deletes one nobody resumed', async () => {
    const customer = await newCustomer('prune-resumed');
    const resumed = await conversationUsed(customer, 10);
    const forgotten = await conversationUsed(customer, 10);

    // She opens the chat on the old conversation (and it waits at its prompt; here, the input ends).
    const chat = await runInProcess(
      CHAT,
      ['--quiet', `--resume=${resumed}`, `--customer=${customer.email}`],
      { env: env(), input: '' },
    );
    expect(chat.stdout).toContain(`Resuming conversation ${resumed}`);

    const pruned = await runInProcess(PRUNE, ['--days=5'], { env: env() });
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain(
      `Deleted conversation ${forgotten} (2 messages) and its traces`,
    );
    expect(pruned.stdout).not.toContain(resumed);
    expect(
      await query('SELECT id FROM conversations WHERE customer_id = ? ORDER BY id', [customer.id]),
    ).toEqual([{ id: resumed }]);

    // Her next question goes on in it, its turn there: nothing says it was deleted.
    const conversation = await findConversation(resumed, customer.id);
    const session = fullSession(customer, fake.llm('gemini'), conversation!, { logDir: logs });
    fake.reply({ text: 'Still here.' });
    const asked = await session.asked('Are you still there?');
    expect(asked.restarted).toBe(false);
    expect(asked.conversation.id).toBe(resumed);
  });
});
