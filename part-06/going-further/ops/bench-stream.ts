// What streaming changes for the reader: time to the first word and to the whole answer, streamed or not, against the fake provider: `npm run bench:stream`.
import { performance } from 'node:perf_hooks';
import {
  parseFlags,
  runMain,
  type ScriptIo,
  startedDirectly,
  UsageError,
} from '../../../shared/cli.ts';
import type { LlmSettings } from '../../../shared/config.ts';
import { commandFor } from '../../../shared/hints.ts';
import { openClusterDatabase } from '../store/cluster-database.ts';
import { chatWithTools, type Message } from '../../../shared/llm/index.ts';
import { streamWithTools } from '../model/stream-with-tools.ts';
import { startFakeProvider } from '../../../shared/testing/fake-provider.ts';

/** A support answer of 40 words, written one word per chunk. */
const CHUNKS =
  'Your order 1043 left our warehouse on Monday and is with the courier now. It should reach you by Thursday. Follow it with the tracking link in your email; I can also open a ticket if anything there looks wrong.'.split(
    /(?<= )/,
  );
/** The time between two chunks: about what a fast model takes per word. */
const PACE_MS = 25;

export function usage(io: ScriptIo): string {
  return `Usage: ${commandFor(import.meta.url, '[--runs=N] [--json]', io)}

Starts the fake provider with an answer written in ${CHUNKS.length} chunks, ${PACE_MS} ms apart, as a model
writes it, and asks for it N times (default 20) per provider through the real SDKs, streamed and not.
Prints the median time until the first word can be shown and until the whole answer is in. --json
prints the same as JSON. Nothing leaves this machine.`;
}

const QUESTION: Message[] = [{ role: 'user', content: 'Where is order 1043?' }];

export async function main(io: ScriptIo): Promise<void> {
  const { values } = parseFlags({
    args: io.args,
    options: { runs: { type: 'string', default: '20' }, json: { type: 'boolean' } },
  });
  if (!/^\d+$/.test(values.runs) || Number(values.runs) < 1)
    throw new UsageError(`--runs must be a whole number of at least 1 (got "${values.runs}").`);
  const runs = Number(values.runs);

  // Every request gets the same paced answer; a whole reply comes when its last chunk would have.
  const fake = await startFakeProvider({ fallback: { text: CHUNKS, stream: { paceMs: PACE_MS } } });
  try {
    const results = [];
    for (const provider of ['gemini', 'openai'] as const) {
      const settings = fake.llm(provider);
      // Once each way first: loading the SDK is not what is measured.
      await timeStreamed(settings);
      await timeWhole(settings);
      const streamed = [];
      const whole = [];
      for (let run = 0; run < runs; run++) {
        streamed.push(await timeStreamed(settings));
        whole.push(await timeWhole(settings));
      }
      results.push({
        provider,
        streamedFirstWordMs: median(streamed.map((times) => times.firstWordMs)),
        streamedAnswerMs: median(streamed.map((times) => times.answerMs)),
        // Without streaming, the first word comes with the whole answer.
        wholeAnswerMs: median(whole),
      });
    }
    if (values.json) {
      io.log(JSON.stringify({ chunks: CHUNKS.length, paceMs: PACE_MS, runs, results }));
      return;
    }
    io.log(
      `An answer of ${CHUNKS.length} chunks, ${PACE_MS} ms apart; median of ${runs} runs, in ms.\n`,
    );
    io.log('provider  first word, streamed  whole answer, streamed  both, not streamed');
    for (const r of results) {
      io.log(
        `${r.provider.padEnd(8)}  ${ms(r.streamedFirstWordMs).padStart(20)}  ${ms(r.streamedAnswerMs).padStart(22)}  ${ms(r.wholeAnswerMs).padStart(18)}`,
      );
    }
  } finally {
    await fake.close();
  }
}

async function timeStreamed(
  settings: LlmSettings,
): Promise<{ firstWordMs: number; answerMs: number }> {
  const start = performance.now();
  let firstWordMs: number | undefined;
  await streamWithTools(settings, QUESTION, [], {
    onText: () => {
      firstWordMs ??= performance.now() - start;
    },
  });
  return { firstWordMs: firstWordMs!, answerMs: performance.now() - start };
}

async function timeWhole(settings: LlmSettings): Promise<number> {
  const start = performance.now();
  await chatWithTools(settings, QUESTION);
  return performance.now() - start;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function ms(value: number): string {
  return Math.round(value).toString();
}

export const openDatabase = openClusterDatabase;
if (startedDirectly(import.meta.url)) await runMain(main, usage, { openDatabase });
