// The fake provider's embeddings: a hashed bag of words, so similar wording gives similar vectors.
//
// Real embedding models understand meaning; this one only counts shared words (after dropping common
// words and crude plural/tense endings). That is enough for retrieval tests to mean something:
// a question shares words with the article that answers it, far less with the others.

const STOPWORDS = new Set(
  `a an and are as at be been but by can could do does did for from had has have how i if in into is it its
  me my of on or our so that the their them then there these this to too was we were what when where which
  who why will with would you your yours about after before any all also am just not no only than up out
  should may might get got please want`.split(/\s+/),
);

/** Lower-case words without common words, with simple endings removed ("refunds" → "refund"). */
function words(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !STOPWORDS.has(w)).map(stem);
}

function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return word.slice(0, -3) + 'y';
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** FNV-1a: a tiny, well-spread string hash. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * Deterministic vector for `text`. The model name seeds the hash, so two "models" disagree, as real
 * ones do. Deliberately not normalised (real Gemini vectors below 3072 dimensions are not either):
 * the code under test must normalise.
 */
export function fakeEmbedding(text: string, dimensions: number, model: string): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of words(text)) {
    const h = hash(`${model}:${word}`);
    vector[h % dimensions] += h & 0x80000000 ? -1 : 1;
  }
  return vector;
}
