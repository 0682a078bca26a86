/**
 * A small seeded generator (xoshiro128**) with normal samples by Box–Muller, so synthesized
 * weights are the same for a seed on every platform.
 */
export class SeededRandom {
  #s = new Uint32Array(4);
  #spare: number | undefined;

  constructor(seed: number) {
    // splitmix32 expands the seed into the four state words.
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      this.#s[i] = (z ^ (z >>> 16)) >>> 0;
    }
  }

  /** Uniform on [0, 1). */
  next(): number {
    const s = this.#s;
    const result = Math.imul(((Math.imul(s[1], 5) << 7) | (Math.imul(s[1], 5) >>> 25)) >>> 0, 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ((s[3] << 11) | (s[3] >>> 21)) >>> 0;
    return result / 4294967296;
  }

  /** A sample of N(mean, std²). */
  normal(mean = 0, std = 1): number {
    if (this.#spare !== undefined) {
      const v = this.#spare;
      this.#spare = undefined;
      return mean + std * v;
    }
    const u = 1 - this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    const a = 2 * Math.PI * this.next();
    this.#spare = r * Math.sin(a);
    return mean + std * r * Math.cos(a);
  }

  /** Fills `out` with N(mean, std²) samples. */
  fillNormal(out: Float32Array, mean: number, std: number): void {
    for (let i = 0; i < out.length; i++) out[i] = this.normal(mean, std);
  }
}
