// Embeds the help-center chunks for search: `npx tsx build-index.ts`. Ctrl-C is safe; run it again to continue.
import { parseFlags, runMain, type ScriptIo, startedDirectly } from '../shared/cli.ts';
import { commandFor } from '../shared/hints.ts';
import { llmSettings } from '../shared/config.ts';
import { ProviderError } from '../shared/llm/index.ts';
import { buildIndex } from './embedding-index.ts';
import { progressBar } from './progress-bar.ts';
import { ensureDatabase } from './setup-database.ts';

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '', io)}

Embeds every help-center chunk that has no embedding from the current embedding model: new chunks,
changed ones, and all of them after switching LLM_PROVIDER. Each batch is saved as it completes:
stop it with Ctrl-C and run it again to continue.`;
}

export async function main(io: ScriptIo): Promise<number | void> {
  parseFlags({ args: io.args, options: {} });
  const llm = llmSettings(io.env);
  const model = llm.embeddingModel;
  if (!model) {
    io.log(
      'No embedding model is configured (set OPENAI_EMBEDDING_MODEL for your server), so there is nothing to index.',
    );
    io.log('search_help_center will use MySQL FULLTEXT keyword search instead.');
    return 0;
  }

  await ensureDatabase(io.error, llm);
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  try {
    const bar = progressBar(`Embedding with ${model}:`, io.stderr);
    const { done, total } = await buildIndex(llm, {
      onProgress: (progress) => progress.total > 0 && bar(progress),
      signal: controller.signal,
    });
    if (done < total) {
      io.log(
        `\nStopped after ${done} of ${total} chunks. Run ${commandFor(import.meta.url, '', io)} again to continue.`,
      );
      return 130;
    }
    io.log(
      total === 0 ? `Index is up to date for ${model}.` : `Embedded ${done} chunks with ${model}.`,
    );
  } catch (error) {
    if (error instanceof ProviderError && error.kind === 'aborted') {
      io.log(
        `\nStopped. Chunks embedded so far are saved; run ${commandFor(import.meta.url, '', io)} again to continue.`,
      );
      return 130;
    }
    throw error;
  }
}

if (startedDirectly(import.meta.url)) await runMain(main, usage);
