// Gives every help-center chunk an embedding, in batches, resuming where an earlier run stopped.
import { query, withTransaction } from '../shared/db.ts';
import type { LlmSettings } from '../shared/config.ts';
import { embed } from '../shared/llm/index.ts';
import type { Progress } from './progress-bar.ts';

/** Chunks per embedding request: few requests, each small enough to retry cheaply. */
const BATCH_SIZE = 16;

/** No vector yet, or one from another model. (<=> is equality that treats NULL as a value.) */
const NEEDS_EMBEDDING = 'c.embedding IS NULL OR NOT (c.embedding_model <=> ?)';

export interface IndexStatus {
  /** The embedding model in use (undefined: none configured, search uses keywords by design). */
  model?: string;
  /** Help-center chunks in the database, and how many have a vector from `model`. */
  total: number;
  indexed: number;
  /** Another model whose vectors are there instead, e.g. after switching LLM_PROVIDER. */
  otherModel?: string;
}

/** How much of the help center the current model has indexed: each chunk records the model of its vector. */
export async function indexStatus(model: string | undefined): Promise<IndexStatus> {
  const [row] = await query<
    Array<{ total: number; indexed: number | null; other_model: string | null }>
  >(
    `SELECT COUNT(*) AS total, SUM(embedding_model <=> ?) AS indexed,
            MAX(CASE WHEN NOT (embedding_model <=> ?) THEN embedding_model END) AS other_model
       FROM help_chunks`,
    [model ?? null, model ?? null],
  );
  return {
    model,
    total: row.total,
    indexed: Number(row.indexed ?? 0),
    otherModel: row.other_model ?? undefined,
  };
}

/** What is wrong with the index, as one sentence ending with the command that fixes it; undefined when nothing is. */
export function describeIndexStatus(status: IndexStatus, fix: string): string | undefined {
  if (!status.model || status.indexed === status.total) return undefined;
  if (status.indexed === 0 && status.otherModel) {
    return `The help-center index was built with ${status.otherModel}, not ${status.model}, so search uses keywords until you rebuild it: ${fix}`;
  }
  if (status.indexed === 0)
    return `The help-center search index is not built yet, so search uses keywords until you build it: ${fix}`;
  return `${status.total - status.indexed} of ${status.total} help-center passages are not indexed with ${status.model} yet, so search cannot find them by meaning. Finish the index: ${fix}`;
}

export interface IndexOptions {
  batchSize?: number;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

/**
 * Embeds every chunk that has no embedding from the current model (new chunks, changed chunks,
 * or chunks embedded with another model). Each batch is saved as it completes, so an interrupted
 * run loses at most one batch and the next run continues from there. Returns how many it embedded.
 */
export async function buildIndex(llm: LlmSettings, options: IndexOptions = {}): Promise<Progress> {
  const model = llm.embeddingModel;
  if (!model) throw new Error('No embedding model is configured.');
  const batchSize = options.batchSize ?? BATCH_SIZE;
  const [count] = await query<Array<{ n: number }>>(
    `SELECT COUNT(*) AS n FROM help_chunks c WHERE ${NEEDS_EMBEDDING}`,
    [model],
  );
  const progress = { done: 0, total: count.n };
  options.onProgress?.(progress);

  while (progress.done < progress.total && !options.signal?.aborted) {
    const batch = await query<Array<{ id: number; title: string; text: string }>>(
      `SELECT c.id, a.title, c.text FROM help_chunks c JOIN help_articles a ON a.id = c.article_id
        WHERE ${NEEDS_EMBEDDING} ORDER BY c.id LIMIT ?`,
      [model, batchSize],
    );
    if (batch.length === 0) break;
    // The article title travels with each chunk: "Refunds… / How to request a refund" says more than the paragraph alone.
    const vectors = await embed(
      llm,
      batch.map((chunk) => `${chunk.title}\n${chunk.text}`),
      'document',
      { signal: options.signal },
    );
    await withTransaction(async (db) => {
      for (const [i, chunk] of batch.entries()) {
        const vector = normalise(vectors[i]);
        await db.query(
          'UPDATE help_chunks SET embedding = ?, embedding_model = ?, dimensions = ? WHERE id = ?',
          [toBlob(vector), model, vector.length, chunk.id],
        );
      }
    });
    progress.done += batch.length;
    options.onProgress?.(progress);
  }
  return progress;
}

/**
 * Scales a vector to length 1, once, at build time. Then the cosine similarity of two vectors is just
 * their dot product, the cheapest comparison there is.
 */
export function normalise(vector: number[]): number[] {
  const length = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
  return length === 0 ? vector : vector.map((x) => x / length);
}

/** Float32, little-endian: the same bytes on every machine. */
function toBlob(vector: number[]): Buffer {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => buffer.writeFloatLE(x, i * 4));
  return buffer;
}

export function fromBlob(blob: Buffer): Float32Array {
  const vector = new Float32Array(blob.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = blob.readFloatLE(i * 4);
  return vector;
}
