// What a user typed comes back in an error message escaped: a flag cannot clear the screen or hide text.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseFlags, runMain, UsageError } from '../cli.ts';

const refusal = (args: string[]) => {
  try {
    parseFlags({ args, options: { days: { type: 'string' } } });
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error('expected a UsageError');
};

describe('parseFlags', () => {
  it.each([
    [['--\x1b[31mx'], 'Unknown option --\\x1b[31mx.'],
    [['--da\u200bys=1'], 'Unknown option --da\\u200bys.'],
    [['ex\u202eet'], 'Unexpected argument ex\\u202eet: this command takes none.'],
  ])('quotes %j back escaped', (args, message) => {
    expect(refusal(args)).toBe(message);
  });

  it('names an option that has a short form by its long one', () => {
    expect(refusal(['--help=yes'])).toBe('--help takes no value.');
  });
});

describe('runMain', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it('prints any error message escaped: one quoting what a server said, or a bug', async () => {
    const printed: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: string) => void printed.push(line));
    await runMain(async () => {
      throw new Error('the server said \x1b[2J\u202ehello');
    }, 'Usage: test');
    expect(printed[0]).toBe('Unexpected error: the server said \\x1b[2J\\u202ehello');
    expect(process.exitCode).toBe(1);
  });

  // Every script parses its flags with parseFlags inside runMain (hints.db.test.ts checks that they do).
  it.each([
    [['--help'], 0, ['Usage: test'], []],
    [['--no-such-option'], 2, [], ['Unknown option --no-such-option.', 'Usage: test']],
  ])(
    '%j: exit %i; the usage on stdout for --help, else after the one-line reason on stderr',
    async (args, code, stdout, stderr) => {
      const printed = { stdout: [] as string[], stderr: [] as string[] };
      vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.stdout.push(line));
      vi.spyOn(console, 'error').mockImplementation(
        (line: string) => void printed.stderr.push(line),
      );
      await runMain(async () => {
        parseFlags({ args, options: {} });
        throw new Error('ran on after its flags were refused');
      }, 'Usage: test');
      expect(printed).toEqual({ stdout, stderr });
      expect(process.exitCode).toBe(code);
    },
  );
});
