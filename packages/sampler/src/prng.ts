/**
 * xoshiro128** 1.1 (Blackman & Vigna, https://prng.di.unimi.it/), seeded from a uint32 through
 * splitmix32. Pure 32-bit integer arithmetic, so a seed gives the same stream on every platform.
 */
export class Xoshiro128 {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  /** @param seed an integer in [0, 2^32); the caller validates it. */
  constructor(seed: number) {
    this.seed(seed);
  }

  /** Restarts the stream for `seed` (an integer in [0, 2^32)). */
  seed(seed: number): void {
    let x = seed >>> 0;
    const next = (): number => {
      // splitmix32: a Weyl sequence through a 32-bit finalizer.
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
      z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
      return (z ^ (z >>> 15)) >>> 0;
    };
    this.setState(next(), next(), next(), next());
  }

  /** Sets the raw state (not all zero; an all-zero state is replaced by [1, 0, 0, 0]). */
  setState(s0: number, s1: number, s2: number, s3: number): void {
    this.s0 = s0 >>> 0;
    this.s1 = s1 >>> 0;
    this.s2 = s2 >>> 0;
    this.s3 = s3 >>> 0;
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** The next uint32. */
  nextUint32(): number {
    const s1 = this.s1;
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return r;
  }

  /** A uniform double in [0, 1) with 53 random bits (two uint32 draws). */
  nextFloat64(): number {
    const hi = this.nextUint32() >>> 5; // 27 bits
    const lo = this.nextUint32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
