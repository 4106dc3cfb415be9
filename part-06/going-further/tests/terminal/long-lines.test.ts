// The chat's piped input is read in one pass, and a line over the limit is never held or echoed whole.
import { Readable, Writable } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { scriptIo } from '../../../../shared/cli.ts';
import { LineInput, LongLine } from '../../terminal/line-input.ts';
import { MAX_QUESTION_CHARS } from '../../question/question-limit.ts';

/** Everything the line input printed (the prompts and the echoed lines), instead of the terminal. */
let printed: string;
beforeEach(() => {
  printed = '';
});
const kept = new Writable({
  write(chunk, _encoding, done) {
    printed += chunk.toString();
    done();
  },
});

/** Piped input: `chunks` arrive one by one, each in a turn of the event loop of its own, as from a pipe. */
function piped(chunks: Iterable<string>) {
  async function* arriving() {
    for (const chunk of chunks) {
      await new Promise((resolve) => setImmediate(resolve));
      yield Buffer.from(chunk);
    }
  }
  const stdin = Readable.from(arriving(), { objectMode: false });
  return scriptIo({ args: [], env: {}, cwd: '', entry: '', stdin, stdout: kept, stderr: kept });
}

/** Every line the input gives, to its end. */
async function allLines(lines: LineInput) {
  const all: Array<string | LongLine> = [];
  for (let line = await lines.next(); line !== undefined; line = await lines.next()) all.push(line);
  lines.close();
  return all;
}

describe('piped lines', () => {
  it('a 100 MB line comes as its length and start, read in one pass, echoed short; the next line follows', async () => {
    const piece = 'x'.repeat(64 * 1024);
    const count = Math.ceil(100_000_000 / piece.length);
    function* input() {
      for (let i = 0; i < count; i++) yield piece;
      yield '\nShort question?\n';
    }
    const lines = new LineInput(piped(input()), MAX_QUESTION_CHARS);
    const [long, short] = await allLines(lines);
    expect(long).toEqual(new LongLine(count * piece.length, 'x'.repeat(60)));
    expect(short).toBe('Short question?');
    expect(printed).toContain(
      `You: ${'x'.repeat(60)}… (${(count * piece.length).toLocaleString('en-US')} characters)\n`,
    );
    expect(printed.length).toBeLessThan(500);
  });

  it('keeps a line of exactly the limit, a "\\r" before its end dropped; one character more is a long line', async () => {
    const exact = 'a'.repeat(10);
    // The lines arrive cut at every place: in the middle, just before "\r", between "\r" and "\n".
    const text = `${exact}\r\n${exact}b\n${exact}\r`;
    const chunks = [...text]; // one character per chunk
    expect(await allLines(new LineInput(piped(chunks), 10))).toEqual([
      exact,
      new LongLine(11, `${exact}b`),
      exact,
    ]);
  });
});
