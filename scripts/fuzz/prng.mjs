/** The fuzzers' random numbers: mulberry32, one independent stream per (seed, subject, iteration). */

/** mulberry32: small, fast, good enough to pick mutations. Returns floats in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The stream of one iteration: independent of the others, so any one replays alone. */
export function iterationRng(seed, subject, iteration) {
  const r = prng(seed ^ Math.imul(subject + 1, 0x9e3779b9) ^ Math.imul(iteration + 1, 0x85ebca6b));
  r();
  return r;
}

/** An integer in [0, n). */
export const int = (r, n) => Math.floor(r() * n);

/** One element of a non-empty list. */
export const pick = (r, xs) => xs[int(r, xs.length)];
