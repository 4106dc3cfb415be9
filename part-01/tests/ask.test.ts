// ask.ts end to end against the fake provider: its work in-process through main(io), and as a process where only a process will do.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { runInProcess } from '../../shared/testing/run-in-process.ts';
import { runScript } from '../../shared/testing/run-script.ts';

// This part's own ask.ts, found from this file, so the test always runs the code beside it.
const SCRIPT = fileURLToPath(new URL('../ask.ts', import.meta.url));
let fake: FakeProvider;

beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());

describe.each(['gemini', 'openai'] as const)('ask.ts with %s', (provider) => {
  it('sends the system prompt and the question, and prints the answer', async () => {
    fake.reply({ text: 'Hi! I am Nimbus. I cannot look up orders yet.' });
    // Run from inside part-01, as the README shows: paths must not depend on the working directory.
    const result = await runScript(SCRIPT, ['What can you do?'], {
      env: fake.env(provider),
      cwd: path.dirname(SCRIPT),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Hi! I am Nimbus. I cannot look up orders yet.\n');
    const request = fake.chats().at(-1)!;
    expect(request.provider).toBe(provider);
    expect(request.view?.system).toContain(
      'Nimbus, the customer-support assistant of Kestrel Electronics',
    );
    expect(request.view?.lastUserText).toBe('What can you do?');
  });
});

describe('ask.ts errors', () => {
  it('without a key: one line naming the variable, exit 1', async () => {
    const result = await runInProcess(SCRIPT, ['Hello'], {
      env: { ...fake.env('gemini'), GEMINI_API_KEY: '' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'GEMINI_API_KEY is not set. Get a free key at https://aistudio.google.com/apikey and put it in .env\n',
    );
    expect(result.stdout).toBe('');
  });

  it('a provider error is one clear line, exit 1', async () => {
    fake.reply({ error: { status: 401 } });
    const result = await runInProcess(SCRIPT, ['Hello'], { env: fake.env('openai') });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'The OpenAI-compatible server rejected the API key (401). Check OPENAI_API_KEY in .env.\n',
    );
  });

  it('without a question: usage, exit 2; --help: usage, exit 0 — written for where it was run from', async () => {
    const missing = await runInProcess(SCRIPT, [], { env: fake.env('gemini') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      'Please give Nimbus a question.\nUsage: npx tsx part-01/ask.ts "your question"\n\nAsks Nimbus one question and prints its answer.\n',
    );
    const help = await runInProcess(SCRIPT, ['--help'], {
      env: fake.env('gemini'),
      cwd: path.dirname(SCRIPT),
    });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: npx tsx ask.ts "your question"');
    const unknown = await runInProcess(SCRIPT, ['--verbose', 'Hi'], { env: fake.env('gemini') });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split('\n')[0]).toBe('Unknown option --verbose.');
  });
});
