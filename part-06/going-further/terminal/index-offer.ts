// At chat start, says once if help-center search will fall back to keywords, and offers to fix it.
import { dim, type ScriptIo } from '../../../shared/cli.ts';
import type { LlmSettings } from '../../../shared/config.ts';
import { commandFor } from '../../../shared/hints.ts';
import { ProviderError } from '../../../shared/llm/index.ts';
import { printable } from '../../../shared/text.ts';
import { buildIndex, describeIndexStatus, indexStatus } from '../../embedding-index.ts';
import { progressBar } from '../../progress-bar.ts';
import type { LineInput } from './line-input.ts';

/**
 * The index may be missing, partial or built by another model (after switching providers). Says so
 * with the command that fixes it; on a terminal, offers to build it right now. Ctrl-C skips the
 * offer, or stops the build (what is embedded so far is kept).
 */
export async function offerToBuildIndex(
  llm: LlmSettings,
  lines: LineInput,
  io: ScriptIo,
): Promise<void> {
  const command = commandFor(new URL('../../build-index.ts', import.meta.url), '', io);
  const problem = describeIndexStatus(await indexStatus(llm.embeddingModel), command);
  if (!problem) return;
  io.log(dim(problem));
  if (!lines.interactive) return;
  // Anything but yes, Ctrl-C and Ctrl-D included, is a no: the chat starts on keywords.
  if (!/^y(es)?$/i.test((await lines.question('Build it now? [y/N] ')).trim())) {
    return void io.log(dim('Not now: search uses keywords until the index is built.'));
  }
  const controller = new AbortController();
  lines.setInterruptHandler(() => (controller.abort(), true));
  try {
    const bar = progressBar('Embedding the help center:', io.stderr);
    await buildIndex(llm, {
      onProgress: (progress) => progress.total > 0 && bar(progress),
      signal: controller.signal,
    });
    if (controller.signal.aborted) {
      io.log(`\nStopped; what is embedded so far is kept. Finish later with: ${command}`);
    }
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    const why =
      error.kind === 'aborted' ? 'stopped' : printable(error.message, { singleLine: true });
    io.log(
      `\nThe index is not finished (${why}); what is embedded so far is kept. Finish later with: ${command}`,
    );
  } finally {
    lines.setInterruptHandler(() => false);
  }
}
