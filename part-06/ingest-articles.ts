// Loads the help-center articles into MySQL as chunks, changing only what changed since the last run.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT_DIR } from '../shared/config.ts';
import { query, withTransaction } from '../shared/db.ts';
import { parseArticle } from './chunking.ts';

/** The help center's Markdown files, one article each (shared by the chapters that use it). */
export const HELP_CENTER_DIR = path.join(ROOT_DIR, 'shared', 'help-center');

export interface IngestReport {
  added: string[];
  changed: string[];
  unchanged: number;
  removed: string[];
  chunks: number;
}

/** One summary line, then the articles that changed or went (new ones are only counted). */
export function describeIngest(report: IngestReport): string[] {
  const lines = [
    `Help center: ${report.added.length} added, ${report.changed.length} changed, ${report.removed.length} removed, ` +
      `${report.unchanged} unchanged; ${report.chunks} chunks in the database.`,
  ];
  for (const [label, slugs] of [
    ['changed', report.changed],
    ['removed', report.removed],
  ] as const) {
    if (slugs.length) lines.push(`  ${label}: ${slugs.join(', ')}`);
  }
  return lines;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export async function ingestArticles(dir: string = HELP_CENTER_DIR): Promise<IngestReport> {
  const report: IngestReport = { added: [], changed: [], unchanged: 0, removed: [], chunks: 0 };
  const files = (await readdir(dir)).filter((file) => file.endsWith('.md')).sort();
  const known = new Map(
    (
      await query<Array<{ id: number; slug: string; content_hash: string }>>(
        'SELECT id, slug, content_hash FROM help_articles',
      )
    ).map((row) => [row.slug, row]),
  );

  for (const file of files) {
    const slug = file.replace(/\.md$/, '');
    const markdown = await readFile(path.join(dir, file), 'utf8');
    const hash = sha256(markdown);
    const existing = known.get(slug);
    known.delete(slug);
    if (existing?.content_hash === hash) {
      report.unchanged++; // same file as last time: nothing to do, embeddings stay
      continue;
    }
    const article = parseArticle(markdown);
    await saveArticle(slug, hash, article.title, article.chunks, existing?.id);
    (existing ? report.changed : report.added).push(slug);
  }

  // Whatever is left in `known` has no file any more. Its chunks go with it (ON DELETE CASCADE).
  for (const [slug, row] of known) {
    await query('DELETE FROM help_articles WHERE id = ?', [row.id]);
    report.removed.push(slug);
  }
  const [count] = await query<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM help_chunks');
  report.chunks = count.n;
  return report;
}

/**
 * Replaces an article's chunks in one transaction, so a search never sees half an article. A chunk whose
 * text is unchanged keeps its embedding (matched by content hash), so editing one paragraph re-embeds
 * one chunk, not the whole article.
 */
async function saveArticle(
  slug: string,
  hash: string,
  title: string,
  chunks: string[],
  articleId?: number,
): Promise<void> {
  await withTransaction(async (db) => {
    let id = articleId;
    const previous = new Map<
      string,
      { embedding: Buffer | null; embedding_model: string | null; dimensions: number | null }
    >();
    if (id === undefined) {
      const [inserted] = await db.query(
        'INSERT INTO help_articles (slug, title, content_hash) VALUES (?, ?, ?)',
        [slug, title, hash],
      );
      id = (inserted as { insertId: number }).insertId;
    } else {
      await db.query('UPDATE help_articles SET title = ?, content_hash = ? WHERE id = ?', [
        title,
        hash,
        id,
      ]);
      const [rows] = await db.query(
        'SELECT content_hash, embedding, embedding_model, dimensions FROM help_chunks WHERE article_id = ?',
        [id],
      );
      for (const row of rows as Array<{
        content_hash: string;
        embedding: Buffer | null;
        embedding_model: string | null;
        dimensions: number | null;
      }>) {
        previous.set(row.content_hash, row);
      }
      await db.query('DELETE FROM help_chunks WHERE article_id = ?', [id]);
    }
    for (const [position, text] of chunks.entries()) {
      const contentHash = sha256(text);
      const kept = previous.get(contentHash);
      await db.query(
        `INSERT INTO help_chunks (article_id, position, text, content_hash, embedding, embedding_model, dimensions)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [
          id,
          position,
          text,
          contentHash,
          kept?.embedding ?? null,
          kept?.embedding_model ?? null,
          kept?.dimensions ?? null,
        ],
      );
    }
  });
}
