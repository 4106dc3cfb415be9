// A database that stops answering mid-chat (frozen, or the network gone): every wait ends, each in one line, and exit exits.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings } from '../../shared/config.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { startPausableProxy, type PausableProxy } from '../../shared/testing/pausable-proxy.ts';
import { collect, startScript, waitForOutput } from '../../shared/testing/run-script.ts';
import { ensureDatabase } from '../setup-database.ts';

const CHAT = fileURLToPath(new URL('../chat.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;
let proxy: PausableProxy;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {});
  const { host, port } = dbSettings(process.env);
  proxy = await startPausableProxy(host, port);
});
afterAll(async () => {
  proxy.thaw();
  await proxy.close();
  await fake.close();
  await db.drop();
});

describe('a database that freezes during a chat', () => {
  it('costs neither the answer nor the chat: the save and the next question each end in one line, and exit exits', async () => {
    proxy.thaw(); // whatever another test left
    const before = fake.chats().length;
    let release!: () => void;
    fake.reply({
      text: 'Order 1042 has shipped.',
      gate: new Promise<void>((resolve) => (release = resolve)),
    });
    const child = startScript(CHAT, ['--quiet'], {
      // The chat talks to the database through the proxy; 1 s is the shortest limit there is.
      env: {
        ...fake.env('gemini'),
        DB_NAME: db.name,
        DB_PORT: String(proxy.port),
        DB_TIMEOUT_SECONDS: '1',
      },
    });
    const done = collect(child);
    child.stdin.write('Where is order 1042?\n');
    await fake.waitForChat(before + 1);
    proxy.freeze(); // the database stops answering while the model writes
    release();
    // The answer is shown as it comes; its save then gives up after DB_TIMEOUT_SECONDS, in one line.
    await waitForOutput(child, 'Nimbus: Order 1042 has shipped.');
    await waitForOutput(child, 'Not saved: MySQL at 127.0.0.1:');
    // A question asked while it is still frozen: the wait for its lock (or for a new connection, when
    // the pool has none left) ends too, and says why in one line.
    child.stdin.write('Are you there?\n');
    const notAnswered =
      /^(MySQL at .* did not answer within 1 s|MySQL at .* did not answer when connecting \(ETIMEDOUT\))/m;
    await waitForOutput(child, notAnswered);
    child.stdin.write('exit\n');
    const result = await done; // exit exits: closing never waits for a server that does not answer
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\nBye!/);
    expect(result.stderr).toMatch(
      /^Not saved: MySQL at 127\.0\.0\.1:\d+ did not answer within 1 s \(DB_TIMEOUT_SECONDS\), so nothing was written\.$/m,
    );
    expect(result.stderr.split('\n').filter((line) => notAnswered.test(line))).toHaveLength(1);
    expect(fake.chats()).toHaveLength(before + 1); // the second question never reached the model
  });
});
