/** A small seeded PRNG (mulberry32): the same seed gives the same inputs on every device. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number;
  /** Integer in [lo, hi). */
  int(lo: number, hi: number): number;
  /** `n` distinct integers in [0, limit), shuffled. */
  distinct(n: number, limit: number): number[];
}

export function prng(seed: number): Rng {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo));
  return {
    next,
    uniform: (lo, hi) => lo + next() * (hi - lo),
    int,
    distinct: (n, limit) => {
      const all = Array.from({ length: limit }, (_, i) => i);
      for (let i = limit - 1; i > 0; i--) {
        const j = int(0, i + 1);
        [all[i], all[j]] = [all[j]!, all[i]!];
      }
      return all.slice(0, n);
    },
  };
}

/** A 32-bit FNV-1a hash of a string (a case's seed from its name). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
