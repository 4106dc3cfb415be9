// Building the index and searching it, with the fake provider's deterministic embeddings.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LlmSettings, OpenAISettings } from '../../shared/config.ts';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { startFakeProvider, type FakeProvider } from '../../shared/testing/fake-provider.ts';
import { buildIndex, fromBlob } from '../embedding-index.ts';
import { searchHelpCenter } from '../search-help.ts';
import { ensureDatabase } from '../setup-database.ts';
import { runTool } from '../tools.ts';
import { newConversation } from '../memory.ts';

let fake: FakeProvider;
let db: ScratchDatabase;
let chunkCount: number;

beforeAll(async () => {
  fake = await startFakeProvider();
  db = await createScratchDatabase();
  await ensureDatabase(() => {}); // no provider yet: the help center is loaded but not embedded
  const [row] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM help_chunks');
  chunkCount = row.n;
});
afterAll(async () => {
  await fake.close();
  await db.drop();
});

/** How many texts the fake provider was asked to embed (one request carries a batch). */
const embeddedTexts = () =>
  fake.requests
    .filter((r) => r.kind === 'embed')
    .reduce(
      (sum, r) => sum + (r.provider === 'gemini' ? r.body.requests.length : r.body.input.length),
      0,
    );

describe.each(['gemini', 'openai'] as const)('the index with %s', (provider) => {
  let llm: LlmSettings;
  beforeAll(async () => {
    llm =
      provider === 'openai'
        ? { ...fake.llm(provider), embeddingModel: 'fake-openai-embedding' }
        : fake.llm(provider);
    await buildIndex(llm); // the searches below need the whole index, built with this model
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  it('resumes an interrupted run where it stopped, then a further run embeds nothing', async () => {
    await query(
      'UPDATE help_chunks SET embedding = NULL, embedding_model = NULL, dimensions = NULL',
    );
    const controller = new AbortController();
    const first = await buildIndex(llm, {
      batchSize: 10,
      signal: controller.signal,
      onProgress: ({ done }) => done >= 20 && controller.abort(), // "Ctrl-C" after two batches
    });
    expect(first).toEqual({ done: 20, total: chunkCount });
    expect(embeddedTexts()).toBe(20);

    fake.requests.length = 0;
    const second = await buildIndex(llm, { batchSize: 10 });
    expect(second).toEqual({ done: chunkCount - 20, total: chunkCount - 20 });
    expect(embeddedTexts()).toBe(chunkCount - 20);

    fake.requests.length = 0;
    expect(await buildIndex(llm)).toEqual({ done: 0, total: 0 });
    expect(embeddedTexts()).toBe(0);
  });

  it('stores one normalised vector per chunk, labelled with its model', async () => {
    const rows = await query<
      Array<{ embedding: Buffer; embedding_model: string; dimensions: number }>
    >('SELECT embedding, embedding_model, dimensions FROM help_chunks');
    expect(rows).toHaveLength(chunkCount);
    for (const row of rows) {
      const vector = fromBlob(row.embedding);
      expect(vector.length).toBe(row.dimensions);
      expect(Math.sqrt(vector.reduce((s, x) => s + x * x, 0))).toBeCloseTo(1, 5);
      expect(row.embedding_model).toBe(
        provider === 'gemini' ? 'fake-embedding-001' : 'fake-openai-embedding',
      );
    }
  });

  // Written before looking at any score: a customer's wording, and the article that answers it.
  it.each([
    ['How long do I have to ask for my money back?', 'refunds'],
    [
      'The box arrived crushed and the screen is cracked, what do I do?',
      'damaged-or-missing-items',
    ],
    ['How much does express delivery cost?', 'shipping-times-and-costs'],
    ["I forgot my password and can't sign in", 'account-and-password'],
    ['Do you ship to Canada, and will I pay import duties?', 'international-shipping'],
    ['Can I still cancel my order before it ships?', 'changing-or-cancelling-an-order'],
    ['My headphones stopped working after five months, is that covered?', 'warranty'],
    ['Can I pay with PayPal or Apple Pay?', 'payment-methods'],
    ['How should I store my power bank so the battery lasts?', 'product-care'],
    ['The price dropped two days after I bought it', 'price-changes'],
    ['Does my gift card expire?', 'gift-cards-and-promo-codes'],
    ['How long do you keep my chat conversations?', 'privacy-and-your-data'],
  ])('finds the right article for "%s"', async (question, slug) => {
    const found = await searchHelpCenter(question, llm);
    expect(found.method).toBe('embeddings');
    const [article] = await query<Array<{ title: string }>>(
      'SELECT title FROM help_articles WHERE slug = ?',
      [slug],
    );
    expect(found.results[0].article).toBe(article.title);
    expect(found.results.length).toBeLessThanOrEqual(3);
  });
});

describe('an index that is behind', () => {
  it('still searches by meaning, and says how many passages it could not search', async () => {
    const llm = { ...fake.llm('openai'), embeddingModel: 'fake-openai-embedding' };
    await buildIndex(llm); // whatever ran before, the index is this model's
    const [article] = await query<Array<{ id: number }>>(
      "SELECT id FROM help_articles WHERE slug = 'refunds'",
    );
    await query(
      "INSERT INTO help_chunks (article_id, position, text, content_hash) VALUES (?, 99, 'Just ingested.', 'x')",
      [article.id],
    );
    try {
      const found = await searchHelpCenter('refund window', llm);
      expect(found.method).toBe('embeddings');
      expect(found.note).toBe('1 help-center passages are not indexed yet and were not searched.');
    } finally {
      await query('DELETE FROM help_chunks WHERE position = 99');
    }
  });
});

describe('keyword fallback', () => {
  it('uses MySQL FULLTEXT when no embedding model is configured', async () => {
    const llm = { ...(fake.llm('openai') as OpenAISettings), embeddingModel: undefined }; // a local server without one
    fake.requests.length = 0;
    const found = await searchHelpCenter('gift card expire', llm);
    expect(found.method).toBe('fulltext');
    expect(found.results[0].article).toMatch(/Gift Cards/i);
    expect(fake.requests).toHaveLength(0);
  });

  it('uses MySQL FULLTEXT when the index was built with another model', async () => {
    const llm = { ...fake.llm('gemini'), embeddingModel: 'a-model-nothing-was-indexed-with' };
    const found = await searchHelpCenter('express shipping cost', llm);
    expect(found.method).toBe('fulltext');
    expect(found.results[0].article).toMatch(/Shipping/i);
  });

  it('says so through the tool when nothing matches', async () => {
    const context = {
      customer: { id: 1, name: 'Maya Patel', email: 'maya.patel@example.com' },
      conversation: newConversation(1),
      llm: { ...(fake.llm('openai') as OpenAISettings), embeddingModel: undefined },
      ticketsOpened: 0,
    };
    const result = await runTool(
      { id: 'c', name: 'search_help_center', arguments: { query: 'zxqv' } },
      context,
    );
    expect(result).toEqual({
      method: 'fulltext',
      results: [],
      note: 'Nothing relevant found in the help center.',
    });
    expect(
      (await runTool({ id: 'c', name: 'search_help_center', arguments: { query: ' ' } }, context))
        .error,
    ).toBe('query must be a non-empty text.');
  });
});
