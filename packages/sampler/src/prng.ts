/**
 * MT19937, the 32-bit Mersenne Twister (Matsumoto & Nishimura, 1998) as C++'s `std::mt19937`
 * defines it, with the uniform draws libstdc++'s `std::uniform_real_distribution` makes from it.
 * llama.cpp samples with these, so a seed draws the same tokens here as in llama.cpp (given the
 * same logits). Pure 32-bit integer arithmetic: the same stream on every platform.
 */
export class Mt19937 {
  private readonly mt = new Uint32Array(624);
  private index = 624;

  /** @param seed an integer in [0, 2^32); the caller validates it. */
  constructor(seed: number) {
    this.seed(seed);
  }

  /** Restarts the stream for `seed` (an integer in [0, 2^32)), as `std::mt19937::seed`. */
  seed(seed: number): void {
    const mt = this.mt;
    mt[0] = seed >>> 0;
    for (let i = 1; i < 624; i++) {
      const p = mt[i - 1]!;
      mt[i] = (Math.imul(1812433253, (p ^ (p >>> 30)) >>> 0) + i) >>> 0;
    }
    this.index = 624;
  }

  /** The next uint32. */
  nextUint32(): number {
    if (this.index >= 624) this.twist();
    let y = this.mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /**
   * A uniform double in [0, 1) as `std::uniform_real_distribution<double>(0, 1)` draws it in
   * libstdc++ (`generate_canonical<double, 53>`): two words, (w0 + w1·2^32) / 2^64 rounded to
   * double, and 1 − 2^−53 where that rounds up to 1.
   */
  nextDouble(): number {
    const lo = this.nextUint32();
    const hi = this.nextUint32();
    const r = (lo + hi * 4294967296) / 2 ** 64;
    return r >= 1 ? 1 - 2 ** -53 : r;
  }

  /**
   * A uniform float in [0, 1) as `std::uniform_real_distribution<float>(0, 1)` draws it in
   * libstdc++ (`generate_canonical<float, 24>`): one word rounded to float, over 2^32, and
   * 1 − 2^−24 where that rounds up to 1.
   */
  nextFloat(): number {
    const r = Math.fround(this.nextUint32()) / 4294967296;
    return r >= 1 ? 1 - 2 ** -24 : r;
  }

  private twist(): void {
    const mt = this.mt;
    for (let i = 0; i < 624; i++) {
      const y = (mt[i]! & 0x80000000) | (mt[(i + 1) % 624]! & 0x7fffffff);
      mt[i] = (mt[(i + 397) % 624]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0)) >>> 0;
    }
    this.index = 0;
  }
}
