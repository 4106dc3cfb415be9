// Embeds the help-center chunks for search: `npx tsx build-index.ts`. Ctrl-C is safe; run it again to continue.
import { parseFlags, runMain } from '../shared/cli.ts';
import { embeddingModel, ProviderError } from '../shared/llm/index.ts';
import { buildIndex } from './embedding-index.ts';
import { progressBar } from './progress-bar.ts';

const USAGE = `Usage: npx tsx build-index.ts

Embeds every help-center chunk that has no embedding from the current model (after ingest.ts).
Each batch is saved as it completes: stop it with Ctrl-C and run it again to continue.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  const model = embeddingModel();
  if (!model) {
    console.log('No embedding model is configured (set OPENAI_EMBEDDING_MODEL for your server), so there is nothing to index.');
    console.log('search_help_center will use MySQL FULLTEXT keyword search instead.');
    return 0;
  }

  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  try {
    const bar = progressBar(`Embedding with ${model}:`);
    const { done, total } = await buildIndex({ onProgress: (progress) => progress.total > 0 && bar(progress), signal: controller.signal });
    if (done < total) {
      console.log(`\nStopped after ${done} of ${total} chunks. Run build-index.ts again to continue.`);
      return 130;
    }
    console.log(total === 0 ? `Index is up to date for ${model}.` : `Embedded ${done} chunks with ${model}.`);
  } catch (error) {
    if (error instanceof ProviderError && error.kind === 'aborted') {
      console.log('\nStopped. Chunks embedded so far are saved; run build-index.ts again to continue.');
      return 130;
    }
    throw error;
  }
}, USAGE);
