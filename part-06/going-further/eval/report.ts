// What the eval prints: a row per scenario with pass^1 … pass^k, the broken expectation of every failed trial, and the totals.
import { printable } from '../../../shared/text.ts';
import { passHatK } from './pass-k.ts';
import { elapsed } from './progress.ts';
import type { TrialRecord } from './trial.ts';

/** Dollars (or any currency) per million tokens, from .env; the cost estimate is shown only with both. */
export interface Prices {
  input: number;
  output: number;
}

export interface ScenarioSummary {
  id: string;
  /** Trials that reached a verdict, and how many of them passed: what pass^k is computed from. */
  judged: number;
  passed: number;
  errors: number;
  /** pass^1 … pass^k; undefined where fewer trials reached a verdict than k. */
  passK: Array<number | undefined>;
  tokens: number;
  meanMs: number;
}

export function summarize(ids: string[], trials: TrialRecord[], k: number): ScenarioSummary[] {
  return ids.map((id) => {
    const mine = trials.filter((t) => t.scenario === id);
    const judged = mine.filter((t) => t.verdict !== 'error').length;
    const passed = mine.filter((t) => t.verdict === 'pass').length;
    return {
      id,
      judged,
      passed,
      errors: mine.length - judged,
      passK: Array.from({ length: k }, (_, i) => passHatK(judged, passed, i + 1)),
      tokens: mine.reduce((sum, t) => sum + t.usage.input_tokens + t.usage.output_tokens, 0),
      meanMs: mine.length ? mine.reduce((sum, t) => sum + t.ms, 0) / mine.length : 0,
    };
  });
}

/** The mean of each pass^j over the scenarios that have one: how τ-bench reports a model. */
export function overall(summaries: ScenarioSummary[], k: number): Array<number | undefined> {
  return Array.from({ length: k }, (_, i) => {
    const known = summaries.flatMap((s) => (s.passK[i] === undefined ? [] : [s.passK[i]!]));
    return known.length ? known.reduce((a, b) => a + b, 0) / known.length : undefined;
  });
}

export function table(summaries: ScenarioSummary[], k: number): string[] {
  const head = ['scenario', 'passed', 'errors', ...passColumns(k), 'tokens', 'mean time'];
  const rows = summaries.map((s) => [
    s.id,
    `${s.passed}/${s.judged}`,
    String(s.errors),
    ...s.passK.map(fixed),
    s.tokens.toLocaleString('en-US'),
    `${(s.meanMs / 1000).toFixed(1)}s`,
  ]);
  const all = summaries.reduce(
    (sum, s) => ({
      passed: sum.passed + s.passed,
      judged: sum.judged + s.judged,
      errors: sum.errors + s.errors,
      tokens: sum.tokens + s.tokens,
    }),
    { passed: 0, judged: 0, errors: 0, tokens: 0 },
  );
  const foot = [
    'all (mean)',
    `${all.passed}/${all.judged}`,
    String(all.errors),
    ...overall(summaries, k).map(fixed),
    all.tokens.toLocaleString('en-US'),
    '',
  ];
  const widths = head.map((_, c) => Math.max(...[head, ...rows, foot].map((row) => row[c].length)));
  // The scenario column reads left to right; the figures line up on the right.
  const line = (row: string[]) =>
    row
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(head), rule, ...rows.map(line), rule, line(foot)];
}

/** One line per trial that failed (each broken expectation) or errored (what stopped it). */
export function failures(trials: TrialRecord[]): string[] {
  return trials.flatMap((t) => {
    const which = `${t.scenario} trial ${t.trial}`;
    if (t.verdict === 'error')
      return [`${which}: error, not judged: ${printable(t.error ?? '', { singleLine: true })}`];
    return t.broken.map((broken) => `${which}: ${printable(broken, { singleLine: true })}`);
  });
}

export function totals(trials: TrialRecord[], wallMs: number, prices?: Prices): string[] {
  const input = trials.reduce((sum, t) => sum + t.usage.input_tokens, 0);
  const output = trials.reduce((sum, t) => sum + t.usage.output_tokens, 0);
  const lines = [
    `Tokens: ${input.toLocaleString('en-US')} in, ${output.toLocaleString('en-US')} out. Wall time: ${elapsed(wallMs)}.`,
  ];
  if (prices) {
    const cost = (input * prices.input + output * prices.output) / 1_000_000;
    lines.push(
      `Estimated cost: ${cost.toFixed(4)} (at ${prices.input} per million tokens in, ${prices.output} out, from .env).`,
    );
  }
  return lines;
}

function passColumns(k: number): string[] {
  return Array.from({ length: k }, (_, i) => `pass^${i + 1}`);
}

function fixed(value: number | undefined): string {
  return value === undefined ? '-' : value.toFixed(2);
}
