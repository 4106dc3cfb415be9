// Whose data a session may see: the signed-in customer comes from configuration, and conversations belong to one customer.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase } from '../setup-database.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';
import { signIn } from '../session.ts';
import { coreSession } from './test-session.ts';

const CHAT = fileURLToPath(new URL('../chat.ts', import.meta.url));
const ASK = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  env = { ...fake.env('openai'), DB_NAME: db.name };
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/** One answered question as `email` (in this process: signing in is tested through the scripts below); returns the conversation id. */
async function conversationOf(email: string): Promise<string> {
  fake.reply({ text: 'Hello!' });
  const session = coreSession(await signIn(email, undefined), fake.llm('gemini'));
  await session.ask('Hi');
  return session.conversation.id;
}

describe('signing in', () => {
  it('takes CUSTOMER_EMAIL, or --customer for one run, and says once who it is', async () => {
    fake.reply({ text: 'Hello Maya!' }, { text: 'Hello Liam!' });
    const maya = await runScript(CHAT, ['--quiet'], { env, input: 'Hi\n' });
    expect(maya.stdout.split('\n')[0]).toBe('Signed in as Maya Patel (maya.patel@example.com).');
    const liam = await runInProcess(CHAT, ['--quiet', '--customer=Liam.OBrien@Example.com'], {
      env,
      input: 'Hi\n',
    });
    expect(liam.stdout.split('\n')[0]).toBe("Signed in as Liam O'Brien (liam.obrien@example.com).");
    expect(fake.chats().at(-1)!.view!.system).toContain(
      '"Liam O\'Brien" (liam.obrien@example.com)',
    );
  });

  // Every reason to refuse is in session.db.test.ts; here, what the scripts do with one.
  it.each([
    [
      ['--customer=SOFIA.GARCÍA@EXAMPLE.COM'],
      {},
      'There is no customer with the email SOFIA.GARCÍA@EXAMPLE.COM.',
    ],
    [
      [],
      { CUSTOMER_EMAIL: '' },
      'Nobody is signed in: set CUSTOMER_EMAIL in .env (the demo customer is maya.patel@example.com), or pass --customer=<email>.',
    ],
  ])('refuses %j %j: one line, exit 2, no question asked', async (args, extra, message) => {
    const before = fake.chats().length;
    const run = await runInProcess(ASK, [...args, 'Hi'], { env: { ...env, ...extra } });
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(message);
    expect(fake.chats()).toHaveLength(before);
  });
});

describe('conversations belong to their customer', () => {
  it("another customer's conversation is not found, exactly like a missing one, for chat.ts and ask.ts", async () => {
    const mayas = await conversationOf('maya.patel@example.com');
    fake.reply({ text: 'Hello Liam.' }, { text: 'Hello again.' });
    const chat = await runInProcess(
      CHAT,
      ['--quiet', '--customer=liam.obrien@example.com', `--resume=${mayas}`],
      { env, input: 'What did I ask before?\n' },
    );
    expect(chat.stdout).toContain(`Conversation ${mayas} was not found; starting a new one.`);
    const ask = await runInProcess(
      ASK,
      ['--quiet', '--customer=liam.obrien@example.com', `--conversation=${mayas}`, 'And now?'],
      { env },
    );
    expect(ask.stderr).toContain(`Conversation ${mayas} was not found; starting a new one.`);
    // Nothing of Maya's conversation reached the model.
    for (const request of fake.chats().slice(-2))
      expect(request.view!.messages.map((m) => m.text)).not.toContain('Hi');
    const missing = await runInProcess(
      ASK,
      ['--quiet', '--customer=liam.obrien@example.com', `--conversation=${'f'.repeat(32)}`, 'x'],
      { env },
    );
    expect(missing.stderr.replace('f'.repeat(32), mayas)).toContain(
      `Conversation ${mayas} was not found; starting a new one.`,
    );
  });

  it('a resume hint printed for a --customer run keeps the --customer, so it continues that conversation', async () => {
    fake.reply({ text: 'Hello Liam.' });
    const first = await runInProcess(CHAT, ['--quiet', '--customer=liam.obrien@example.com'], {
      env,
      input: 'Hi\n',
    });
    const id = first.stdout.match(/New conversation ([0-9a-f]{32})/)![1];
    expect(first.stdout).toContain(
      `Bye! Resume later with: npx tsx part-06/chat.ts --resume=${id} --customer=liam.obrien@example.com`,
    );
    const again = await runInProcess(
      CHAT,
      ['--quiet', `--resume=${id}`, '--customer=liam.obrien@example.com'],
      { env, input: 'exit\n' },
    );
    expect(again.stdout).toContain(`Resuming conversation ${id}`);
  });
});
