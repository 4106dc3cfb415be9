// Chunking: cut along headings and paragraphs, within the size bound, with a small overlap.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { wellFormed } from '../../shared/text.ts';
import { MAX_CHUNK_CHARS, OVERLAP_CHARS, parseArticle } from '../chunking.ts';
import { HELP_CENTER_DIR } from '../ingest-articles.ts';

/** Paragraph n: six short sentences of distinct words, about 250 characters. */
const paragraph = (n: number) =>
  Array.from({ length: 6 }, (_, s) => `Paragraph ${n} sentence ${s} says a little.`).join(' ');

describe('parseArticle', () => {
  it('reads the title and makes one chunk per short section, headed by its section', () => {
    const article = parseArticle(
      '# Shipping\n\nIntro text.\n\n## Costs\n\nFree from $50.\n\n## Times\n\nThree to five days.\n',
    );
    expect(article.title).toBe('Shipping');
    expect(article.chunks).toEqual([
      '## Shipping\n\nIntro text.',
      '## Costs\n\nFree from $50.',
      '## Times\n\nThree to five days.',
    ]);
  });

  it('never lets a chunk cross a heading, even when both sections are small', () => {
    const article = parseArticle('# T\n\n## A\n\nAlpha.\n\n## B\n\nBeta.');
    expect(article.chunks.every((chunk) => chunk.match(/^## /gm)!.length === 1)).toBe(true);
  });

  it('splits a long section between paragraphs and repeats the end of the previous chunk', () => {
    const body = Array.from({ length: 8 }, (_, i) => paragraph(i)).join('\n\n');
    const { chunks } = parseArticle(`# T\n\n## Long section\n\n${body}`);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.startsWith('## Long section\n\n')).toBe(true);
      expect(chunk.length).toBeLessThanOrEqual(MAX_CHUNK_CHARS);
    }
    // The second chunk opens with the last sentence(s) of the first: the overlap.
    const firstBody = chunks[0].slice('## Long section\n\n'.length);
    const secondBody = chunks[1].slice('## Long section\n\n'.length);
    const overlap = secondBody.split('\n\n')[0];
    expect(overlap.length).toBeLessThanOrEqual(OVERLAP_CHARS);
    expect(firstBody.endsWith(overlap)).toBe(true);
    // Paragraphs are never cut when they fit: each one appears whole in some chunk.
    for (let i = 0; i < 8; i++)
      expect(chunks.some((chunk) => chunk.includes(paragraph(i)))).toBe(true);
  });

  it('cuts a paragraph longer than a chunk between sentences, and a giant word where it must', () => {
    const sentences = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} is here.`).join(
      ' ',
    );
    const giant = 'x'.repeat(2500);
    const { chunks } = parseArticle(`# T\n\n## S\n\n${sentences}\n\n${giant}`);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(MAX_CHUNK_CHARS);
    expect(chunks.filter((c) => /Sentence number \d+ is here\.$/.test(c)).length).toBeGreaterThan(
      0,
    );
    expect(chunks.join('').replace(/[^x]/g, '').length).toBeGreaterThanOrEqual(2500);
  });

  it('never cuts an emoji in half, even inside a giant word', () => {
    for (const offset of [0, 1]) {
      const { chunks } = parseArticle(`# T\n\n## S\n\n${'x'.repeat(offset)}${'🎧'.repeat(1500)}`);
      expect(chunks.length).toBeGreaterThan(2);
      for (const chunk of chunks) expect(wellFormed(chunk), chunk.slice(-3)).toBe(chunk);
    }
  });

  it('keeps every paragraph of every help-center article, within the size bound', () => {
    for (const file of readdirSync(HELP_CENTER_DIR)) {
      const markdown = readFileSync(path.join(HELP_CENTER_DIR, file), 'utf8');
      const { chunks } = parseArticle(markdown);
      expect(chunks.length).toBeGreaterThan(0);
      for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(MAX_CHUNK_CHARS);
      const paragraphs = markdown
        .split(/\n\s*\n/)
        .map((p) => p.trim())
        .filter((p) => p && !p.startsWith('#'));
      for (const p of paragraphs)
        expect(
          chunks.some((chunk) => chunk.includes(p)),
          `${file}: ${p.slice(0, 40)}`,
        ).toBe(true);
    }
  });
});
