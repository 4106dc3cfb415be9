// Ctrl-C in the full Nimbus's ask.ts keeps the steps it finished, and still names the conversation to go on in.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../../../shared/db.ts';
import {
  createScratchDatabase,
  type ScratchDatabase,
} from '../../../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../../../shared/testing/fake-provider.ts';
import { collect, startScript } from '../../../../shared/testing/run-script.ts';
import { ensureFullDatabase } from '../../store/ensure-tables.ts';

const ASK = fileURLToPath(new URL('../../ask.ts', import.meta.url));
let fake: FakeProvider;
let db: ScratchDatabase;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureFullDatabase(() => {});
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

describe('Ctrl-C in going further’s ask.ts', () => {
  it('after a step was saved: exit 130, the step kept, and the follow-up names its conversation', async () => {
    const asked = fake.chats().length;
    fake.reply(
      { tool_calls: [{ name: 'get_order_status', arguments: { order_id: 1042 } }] },
      { text: 'never delivered', gate: new Promise(() => {}) },
    );
    const child = startScript(ASK, ['--quiet', 'Where is order 1042?'], {
      env: { ...fake.env('openai'), DB_NAME: db.name },
    });
    const done = collect(child);
    await fake.waitForChat(asked + 2); // the tool's step is saved before the model is asked again
    child.kill('SIGINT');
    const result = await done;
    expect(result.code, result.stderr).toBe(130);
    const id = /Conversation ([0-9a-f]{32}): ask a follow-up with /.exec(result.stderr)?.[1];
    expect(id, result.stderr).toBeDefined();
    const rows = await query<Array<{ role: string }>>(
      'SELECT role FROM messages WHERE conversation_id = ? ORDER BY seq',
      [id],
    );
    expect(rows.map((row) => row.role)).toEqual(['user', 'assistant', 'tool']);
    expect(result.stdout).toBe('');
  });
});
