// pass^k on known counts, against the binomials themselves, and how a table's figures come from trials (errors left out).
import { describe, expect, it } from 'vitest';
import { passHatK } from '../../eval/pass-k.ts';
import { overall, summarize, totals } from '../../eval/report.ts';
import type { TrialRecord } from '../../eval/trial.ts';

/** C(n, k), counted the slow, obvious way. */
function choose(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let result = 1;
  for (let i = 1; i <= k; i++) result = (result * (n - k + i)) / i;
  return result;
}

describe('pass^k', () => {
  it('is C(c,k)/C(n,k) on known counts', () => {
    expect(passHatK(4, 2, 1)).toBe(0.5);
    expect(passHatK(4, 2, 2)).toBeCloseTo(1 / 6, 12); // 1 of the 6 pairs passed twice
    expect(passHatK(10, 7, 3)).toBeCloseTo(35 / 120, 12);
    expect(passHatK(8, 8, 8)).toBe(1);
    expect(passHatK(5, 3, 4)).toBe(0); // fewer passes than tries: never all k
    expect(passHatK(3, 0, 1)).toBe(0);
  });

  it('matches the binomials for every count up to 12 trials', () => {
    for (let n = 1; n <= 12; n++)
      for (let c = 0; c <= n; c++)
        for (let k = 1; k <= n; k++)
          expect(passHatK(n, c, k), `n=${n} c=${c} k=${k}`).toBeCloseTo(
            choose(c, k) / choose(n, k),
            12,
          );
  });

  it('says nothing about more tries than there were trials', () => {
    expect(passHatK(3, 3, 4)).toBeUndefined();
    expect(passHatK(0, 0, 1)).toBeUndefined();
  });
});

describe('the figures of a table', () => {
  const trial = (scenario: string, verdict: TrialRecord['verdict'], tokens = 10): TrialRecord => ({
    scenario,
    trial: 1,
    verdict,
    broken: [],
    turns: [],
    usage: { input_tokens: tokens, output_tokens: 0 },
    ms: 1000,
    database: 'nimbus_eval_x',
  });

  it('counts only the trials with a verdict, and says how many errored', () => {
    const trials = [
      trial('a', 'pass'),
      trial('a', 'error'),
      trial('a', 'pass'),
      trial('a', 'fail'),
      trial('b', 'error'),
      trial('b', 'error'),
      trial('b', 'error'),
    ];
    const [a, b] = summarize(['a', 'b'], trials, 3);
    expect(a).toMatchObject({ judged: 3, passed: 2, errors: 1, tokens: 40, meanMs: 1000 });
    expect(a.passK).toEqual([2 / 3, 1 / 3, 0]);
    expect(b).toMatchObject({ judged: 0, passed: 0, errors: 3 });
    expect(b.passK).toEqual([undefined, undefined, undefined]);
    // The mean over scenarios leaves out the one with no verdict at all.
    expect(overall([a, b], 3)).toEqual([2 / 3, 1 / 3, 0]);
  });

  it('estimates the cost only with both prices, per million tokens in and out', () => {
    const trials = [
      { ...trial('a', 'pass'), usage: { input_tokens: 1_500_000, output_tokens: 20_000 } },
      { ...trial('b', 'error'), usage: { input_tokens: 500_000, output_tokens: 0 } },
    ];
    expect(totals(trials, 75_000)).toEqual([
      'Tokens: 2,000,000 in, 20,000 out. Wall time: 1m 15s.',
    ]);
    expect(totals(trials, 75_000, { input: 0.3, output: 2.5 })[1]).toBe(
      'Estimated cost: 0.6500 (at 0.3 per million tokens in, 2.5 out, from .env).',
    );
  });
});
