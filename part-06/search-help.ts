// Finds the help-center passages that best match a question: by meaning when there is an index, by keywords otherwise.
import type { LlmSettings } from '../shared/config.ts';
import { query } from '../shared/db.ts';
import { embed, ProviderError } from '../shared/llm/index.ts';
import { fromBlob, indexStatus, normalise } from './embedding-index.ts';

/** How many passages go back to the model: enough to cover a question, few enough to keep the context small. */
const TOP_K = 3;

export interface SearchResult {
  method: 'embeddings' | 'fulltext';
  results: Array<{ article: string; text: string; score: number }>;
  note?: string;
}

export async function searchHelpCenter(
  question: string,
  llm: LlmSettings,
  signal?: AbortSignal,
): Promise<SearchResult> {
  const { model, total, indexed } = await indexStatus(llm.embeddingModel);
  if (!model || indexed === 0) return searchByKeywords(question);
  try {
    const found = await searchByMeaning(question, llm, signal);
    // Chunks ingested since the last build-index cannot be found by meaning yet: the model should know
    // its search was partial (the person running Nimbus is told at start, with the command that fixes it).
    const missing = total - indexed;
    return missing > 0
      ? {
          ...found,
          note: `${missing} help-center passages are not indexed yet and were not searched.`,
        }
      : found;
  } catch (error) {
    // The embedding API failing should cost the customer precision, not the answer. Cancelled is no failure.
    if (!(error instanceof ProviderError) || error.kind === 'aborted') throw error;
    return {
      ...(await searchByKeywords(question)),
      note: `Embedding search failed (${error.message}); used keyword search.`,
    };
  }
}

/**
 * Cosine similarity against every chunk. The stored vectors are already normalised, so after
 * normalising the question's vector the similarity is a dot product. A help center has a few
 * hundred chunks at most: comparing them all takes well under a millisecond.
 */
async function searchByMeaning(
  question: string,
  llm: LlmSettings,
  signal?: AbortSignal,
): Promise<SearchResult> {
  const [vector] = await embed(llm, [question], 'query', { signal });
  const q = normalise(vector);
  const chunks = await query<Array<{ title: string; text: string; embedding: Buffer }>>(
    `SELECT a.title, c.text, c.embedding FROM help_chunks c JOIN help_articles a ON a.id = c.article_id
      WHERE c.embedding_model = ?`,
    [llm.embeddingModel],
  );
  const scored = chunks
    .map((chunk) => {
      const v = fromBlob(chunk.embedding);
      let dot = 0;
      for (let i = 0; i < q.length; i++) dot += q[i] * v[i];
      return { article: chunk.title, text: chunk.text, score: Math.round(dot * 1000) / 1000 };
    })
    .filter((result) => result.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, TOP_K);
  return { method: 'embeddings', results: scored };
}

/** MySQL's own FULLTEXT search ("natural language mode" ranks by shared words, rare words counting more). */
async function searchByKeywords(question: string): Promise<SearchResult> {
  const rows = await query<Array<{ title: string; text: string; score: number }>>(
    `SELECT a.title, c.text, MATCH(c.text) AGAINST (? IN NATURAL LANGUAGE MODE) AS score
       FROM help_chunks c JOIN help_articles a ON a.id = c.article_id
      WHERE MATCH(c.text) AGAINST (? IN NATURAL LANGUAGE MODE)
      ORDER BY score DESC, c.id LIMIT ?`,
    [question, question, TOP_K],
  );
  return {
    method: 'fulltext',
    results: rows.map((row) => ({
      article: row.title,
      text: row.text,
      score: Math.round(row.score * 1000) / 1000,
    })),
  };
}
