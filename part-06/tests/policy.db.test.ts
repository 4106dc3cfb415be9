// Part 5 end to end: a policy question is answered by searching the help center first, for both providers.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runScript } from '../../shared/testing/run-script.ts';

const SCRIPT = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;

beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());

describe.each(['gemini', 'openai'] as const)('ask.ts with %s', (provider) => {
  let db: ScratchDatabase;
  beforeAll(async () => {
    db = await createScratchDatabase(); // empty: the first run loads and indexes the help center
  });
  afterAll(() => db.drop());

  it('searches the help center, then answers from the article it found', async () => {
    fake.reply(
      (view) => {
        expect(view.tools).toContain('search_help_center');
        return {
          tool_calls: [{ name: 'search_help_center', arguments: { query: view.lastUserText } }],
        };
      },
      (view) => {
        const found = view.toolResults[0].result as {
          method: string;
          results: Array<{ article: string; text: string }>;
        };
        return {
          text: `[${found.method}] ${found.results[0].article}: ${found.results[0].text.split('\n\n')[1]}`,
        };
      },
    );
    const result = await runScript(SCRIPT, ['How long do I have to ask for my money back?'], {
      env: { ...fake.env(provider), DB_NAME: db.name },
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`Database "${db.name}": creating customers,`);
    expect(result.stderr).toMatch(/Embedded \d+ help-center chunks with fake-embedding-001\./);
    expect(result.stderr).toContain('[step 1] model → search_help_center(');
    expect(result.stdout).toMatch(
      /^\[embeddings\] Refunds and the 14-Day Refund Window: .*14 days/,
    );
  });
});
