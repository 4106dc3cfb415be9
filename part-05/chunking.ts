// Cuts a Markdown article into passages ("chunks") small enough to embed, search and quote.
//
// Why chunks: a whole article is about many things, so its one vector is vague, and quoting it would
// fill the model's context. A passage is about one thing. We cut along the article's own structure
// (headings, then paragraphs) so each chunk is a readable piece, and repeat the section heading in
// every chunk so it still makes sense on its own.

/** The longest chunk, in characters (about 250 tokens): one or two paragraphs of a help article. */
export const MAX_CHUNK_CHARS = 1000;
/** How much of the previous chunk's end a continued section repeats, so no sentence loses its context. */
export const OVERLAP_CHARS = 150;

export interface Article {
  title: string;
  chunks: string[];
}

export function parseArticle(markdown: string): Article {
  const lines = markdown.replace(/\r\n/g, '\n').split('\n');
  const titleLine = lines.find((line) => line.startsWith('# '));
  const title = titleLine ? titleLine.slice(2).trim() : 'Untitled';

  // Sections: the introduction (under the title), then one per "## " heading.
  const sections: Array<{ heading: string; lines: string[] }> = [{ heading: title, lines: [] }];
  for (const line of lines) {
    if (line === titleLine) continue;
    if (line.startsWith('## ')) sections.push({ heading: line.slice(3).trim(), lines: [] });
    else sections.at(-1)!.lines.push(line);
  }
  const chunks = sections.flatMap((section) =>
    chunkSection(section.heading, section.lines.join('\n')),
  );
  return { title, chunks };
}

function chunkSection(heading: string, body: string): string[] {
  const prefix = `## ${heading}\n\n`;
  const budget = MAX_CHUNK_CHARS - prefix.length;
  const pieces = body
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean)
    .flatMap((paragraph) =>
      paragraph.length <= budget ? [paragraph] : splitLongText(paragraph, budget),
    );

  const chunks: string[] = [];
  let current = '';
  for (const piece of pieces) {
    const joined = current ? `${current}\n\n${piece}` : piece;
    if (joined.length <= budget) {
      current = joined;
      continue;
    }
    chunks.push(current);
    // Start the next chunk with the end of this one, if it fits beside the new piece.
    const overlap = tail(current, OVERLAP_CHARS);
    current =
      overlap && overlap.length + 2 + piece.length <= budget ? `${overlap}\n\n${piece}` : piece;
  }
  if (current) chunks.push(current);
  return chunks.map((chunk) => prefix + chunk);
}

/** A paragraph longer than the budget is cut between sentences (or, for one huge sentence, between words). */
function splitLongText(text: string, budget: number): string[] {
  const sentences = text.match(/[^.!?]+[.!?]+(\s+|$)|[^.!?]+$/g) ?? [text];
  const parts: string[] = [];
  let current = '';
  for (const sentence of sentences.flatMap((s) =>
    s.length <= budget ? [s] : splitWords(s, budget),
  )) {
    if ((current + sentence).trim().length > budget) {
      parts.push(current.trim());
      current = '';
    }
    current += sentence;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

function splitWords(text: string, budget: number): string[] {
  const parts: string[] = [];
  let current = '';
  for (const word of text.split(/(?<=\s)/)) {
    if (current && (current + word).length > budget) {
      parts.push(current);
      current = '';
    }
    current += word;
    // A single "word" longer than the budget (a long URL, say) is cut where it must be, but never
    // between the two halves of an emoji: half of one is not valid text anywhere it is stored or sent.
    while (current.length > budget) {
      const cut = isHighSurrogate(current.charCodeAt(budget - 1)) ? budget - 1 : budget;
      parts.push(current.slice(0, cut));
      current = current.slice(cut);
    }
  }
  if (current) parts.push(current);
  return parts;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** The last whole sentences of `text` that fit in `max` characters ('' if even one does not). */
function tail(text: string, max: number): string {
  const sentences = text.match(/[^.!?\n]+[.!?]+/g) ?? [];
  let result = '';
  for (let i = sentences.length - 1; i >= 0; i--) {
    const candidate = `${sentences[i].trim()} ${result}`.trim();
    if (candidate.length > max) break;
    result = candidate;
  }
  return result;
}
