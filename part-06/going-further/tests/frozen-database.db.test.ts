// Going further: a database that stops answering mid-chat (frozen, or the network gone): every wait ends, each in one line, and exit exits.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbSettings } from '../../../shared/config.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../shared/testing/fake-provider.ts';
import { startPausableProxy, type PausableProxy } from '../../../shared/testing/pausable-proxy.ts';
import { collect, startScript } from '../../../shared/testing/run-script.ts';
import { ensureDatabase } from '../../setup-database.ts';

const FULL_ASK = fileURLToPath(new URL('../ask.ts', import.meta.url));
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
  it('never keeps the full ask.ts alive: frozen while the model answers under the lease, it still ends', async () => {
    proxy.thaw();
    let release!: () => void;
    fake.reply({ text: 'Order 1042 has shipped.', gate: new Promise<void>((r) => (release = r)) });
    const asked = fake.chats().length;
    const env = {
      ...fake.env('gemini'),
      DB_NAME: db.name,
      DB_PORT: String(proxy.port),
      DB_TIMEOUT_SECONDS: '1',
    };
    const child = startScript(FULL_ASK, ['--quiet', 'Where is order 1042?'], { env });
    const done = collect(child);
    await fake.waitForChat(asked + 1); // its lease is taken and its history read: the model is answering
    proxy.freeze();
    release();
    const result = await done; // ends: the save, the lease's release and closing each give up in time
    proxy.thaw();
    expect(result.stdout).toContain('Order 1042 has shipped.');
    expect(result.stderr).toMatch(/did not answer within 1 s/);
    expect(result.code).toBe(1);
  });
});
