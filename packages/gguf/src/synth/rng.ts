import { GgufError } from "../errors.js";

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

  /**
   * The generator of `seed` positioned as if `index` samples had already been drawn from it with
   * {@link normal} (or {@link fillNormal}): the next sample is the one at `index` of that stream.
   * Costs about log2(index) small GF(2) matrix-vector products, not `index` draws.
   */
  static atNormal(seed: number, index: number): SeededRandom {
    if (!Number.isSafeInteger(index) || index < 0)
      throw new GgufError(
        "INVALID_ARGUMENT",
        `sample index must be a non-negative safe integer, got ${index}`,
      );
    const r = new SeededRandom(seed);
    // Box–Muller draws two uniforms per pair of samples; an odd index starts inside a pair.
    r.skip(index - (index % 2));
    if (index % 2 === 1) r.normal();
    return r;
  }

  /** Advances the state as `n` calls of {@link next} would (the pending normal sample is dropped). */
  skip(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new GgufError("INVALID_ARGUMENT", `skip count must be a non-negative safe integer, got ${n}`);
    this.#spare = undefined;
    const tmp = new Uint32Array(4);
    for (let k = 0; n > 0; k++, n = Math.floor(n / 2)) {
      if (n % 2 === 1) {
        applyMatrix(stepPower(k), this.#s, tmp);
        this.#s.set(tmp);
      }
    }
  }

  /** Uniform on [0, 1). */
  next(): number {
    const s = this.#s;
    const result = Math.imul(((Math.imul(s[1], 5) << 7) | (Math.imul(s[1], 5) >>> 25)) >>> 0, 9) >>> 0;
    step(s);
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

/** One xoshiro128 state transition, in place. It is linear over GF(2) in the 128 state bits. */
function step(s: Uint32Array): void {
  const t = (s[1] << 9) >>> 0;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = ((s[3] << 11) | (s[3] >>> 21)) >>> 0;
}

/** out = M·v over GF(2); M is 128 columns of 4 words (column j is the image of state bit j). */
function applyMatrix(m: Uint32Array, v: Uint32Array, out: Uint32Array): void {
  let o0 = 0;
  let o1 = 0;
  let o2 = 0;
  let o3 = 0;
  for (let j = 0; j < 128; j++) {
    if ((v[j >>> 5]! >>> (j & 31)) & 1) {
      const c = j * 4;
      o0 ^= m[c]!;
      o1 ^= m[c + 1]!;
      o2 ^= m[c + 2]!;
      o3 ^= m[c + 3]!;
    }
  }
  out[0] = o0;
  out[1] = o1;
  out[2] = o2;
  out[3] = o3;
}

/** STEP_POWERS[k] is the transition matrix raised to 2^k, computed on first use. */
const STEP_POWERS: Uint32Array[] = [];

function stepPower(k: number): Uint32Array {
  if (STEP_POWERS.length === 0) {
    const m = new Uint32Array(512);
    const e = new Uint32Array(4);
    for (let j = 0; j < 128; j++) {
      e.fill(0);
      e[j >>> 5] = (1 << (j & 31)) >>> 0;
      step(e);
      m.set(e, j * 4);
    }
    STEP_POWERS.push(m);
  }
  while (STEP_POWERS.length <= k) {
    const a = STEP_POWERS[STEP_POWERS.length - 1]!;
    const sq = new Uint32Array(512);
    for (let j = 0; j < 128; j++) applyMatrix(a, a.subarray(j * 4, j * 4 + 4), sq.subarray(j * 4, j * 4 + 4));
    STEP_POWERS.push(sq);
  }
  return STEP_POWERS[k]!;
}
