// Ingest is idempotent and change-aware: unchanged articles stay, edits replace chunks, deletions go.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { query } from '../../shared/db.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../shared/testing/database.ts';
import { HELP_CENTER_DIR, ingestArticles } from '../ingest-articles.ts';
import { ensureDatabase } from '../setup-database.ts';

let db: ScratchDatabase;
let dir: string;

// Each test starts from a fresh setup and its own copy of the articles: a test that edits them
// leaves nothing behind for the next one, in whatever order they run.
beforeEach(async () => {
  db = await createScratchDatabase();
  await ensureDatabase(() => {}); // no provider configured here: the index is skipped, ingest still runs
  dir = mkdtempSync(path.join(os.tmpdir(), 'nimbus-help-'));
  cpSync(HELP_CENTER_DIR, dir, { recursive: true });
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db.drop();
});

const chunkRows = () =>
  query<
    Array<{
      id: number;
      slug: string;
      position: number;
      content_hash: string;
      embedding: Buffer | null;
    }>
  >(
    `SELECT c.id, a.slug, c.position, c.content_hash, c.embedding FROM help_chunks c
       JOIN help_articles a ON a.id = c.article_id ORDER BY a.slug, c.position`,
  );

describe('ingestArticles', () => {
  it('loaded every article during setup, and a second run changes nothing', async () => {
    const before = await chunkRows();
    expect(new Set(before.map((r) => r.slug)).size).toBe(16);
    const report = await ingestArticles(dir);
    expect(report).toMatchObject({
      added: [],
      changed: [],
      removed: [],
      unchanged: 16,
      chunks: before.length,
    });
    expect(await chunkRows()).toEqual(before);
  });

  it('replaces the chunks of a changed article, keeping the embeddings of passages that did not change', async () => {
    // Pretend every chunk was embedded, so we can see which embeddings survive the edit.
    await query(
      "UPDATE help_chunks SET embedding = 'vector', embedding_model = 'm', dimensions = 1",
    );
    const file = path.join(dir, 'refunds.md');
    const original = readFileSync(file, 'utf8');
    writeFileSync(file, original.replace('Day 14 is the last day', 'Day fourteen is the last day'));
    const report = await ingestArticles(dir);
    expect(report).toMatchObject({ added: [], changed: ['refunds'], removed: [], unchanged: 15 });

    const refunds = (await chunkRows()).filter((r) => r.slug === 'refunds');
    const edited = refunds.filter((r) => r.embedding === null);
    expect(edited).toHaveLength(1); // only the edited passage lost its embedding
    const [text] = await query<Array<{ text: string }>>(
      'SELECT text FROM help_chunks WHERE id = ?',
      [edited[0].id],
    );
    expect(text.text).toContain('Day fourteen is the last day');
    expect(
      (await chunkRows()).filter((r) => r.slug !== 'refunds').every((r) => r.embedding !== null),
    ).toBe(true);
  });

  it('adds a new article and removes a deleted one with all its chunks', async () => {
    writeFileSync(
      path.join(dir, 'store-hours.md'),
      '# Store Hours\n\nWe are online only.\n\n## Pickup\n\nThere is no pickup.\n',
    );
    rmSync(path.join(dir, 'product-care.md'));
    const report = await ingestArticles(dir);
    expect(report).toMatchObject({ added: ['store-hours'], removed: ['product-care'] });
    const slugs = new Set((await chunkRows()).map((r) => r.slug));
    expect(slugs.has('store-hours')).toBe(true);
    expect(slugs.has('product-care')).toBe(false);
    const [orphans] = await query<Array<{ n: number }>>(
      'SELECT COUNT(*) AS n FROM help_chunks c LEFT JOIN help_articles a ON a.id = c.article_id WHERE a.id IS NULL',
    );
    expect(orphans.n).toBe(0);
  });
});
