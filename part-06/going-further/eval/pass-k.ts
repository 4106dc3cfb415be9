// Pass^k, the chance that k tries of a task all succeed, estimated from n tries with c successes (τ-bench, Yao et al. 2024).

/**
 * C(c, k) / C(n, k): of every way to pick k of the n trials, the share where all k passed. Unlike
 * (c/n)^k it is unbiased, and it is 0 as soon as k exceeds the passes. Undefined when k > n: n trials
 * say nothing about k tries.
 */
export function passHatK(n: number, c: number, k: number): number | undefined {
  if (k > n || k < 1) return undefined;
  // The product of (c - i) / (n - i) for i < k: the binomials' ratio without their huge factorials.
  let share = 1;
  for (let i = 0; i < k; i++) share *= (c - i) / (n - i);
  return Math.max(0, share);
}
