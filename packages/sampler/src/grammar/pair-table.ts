/**
 * A hash table from pairs of non-negative 32-bit integers to non-negative integers, open
 * addressing in typed arrays: the matcher's (position, rest) pairs, looked up several times per
 * stack per character, without the boxed numbers and garbage a Map of `a * width + b` keys makes.
 * `clear()` is O(1) (entries from before it are stale by their generation).
 */
export class PairTable {
  private keysA: Int32Array;
  private keysB: Int32Array;
  private values: Int32Array;
  /** The generation each slot was written in; a slot of another generation is empty. */
  private gens: Uint32Array;
  private gen = 1;
  private mask: number;
  private count = 0;

  constructor(capacity = 1024) {
    let n = 16;
    while (n < capacity * 2) n *= 2;
    this.keysA = new Int32Array(n);
    this.keysB = new Int32Array(n);
    this.values = new Int32Array(n);
    this.gens = new Uint32Array(n);
    this.mask = n - 1;
  }

  /** How many pairs it holds. */
  get size(): number {
    return this.count;
  }

  /** The value of (a, b), or -1. */
  get(a: number, b: number): number {
    const { keysA, keysB, gens, mask, gen } = this;
    for (let i = hash(a, b) & mask; ; i = (i + 1) & mask) {
      if (gens[i] !== gen) return -1;
      if (keysA[i] === a && keysB[i] === b) return this.values[i]!;
    }
  }

  /** Sets (a, b) to `value` (>= 0). */
  set(a: number, b: number, value: number): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.grow();
    const { keysA, keysB, gens, mask, gen } = this;
    for (let i = hash(a, b) & mask; ; i = (i + 1) & mask) {
      if (gens[i] !== gen) {
        gens[i] = gen;
        keysA[i] = a;
        keysB[i] = b;
        this.values[i] = value;
        this.count++;
        return;
      }
      if (keysA[i] === a && keysB[i] === b) {
        this.values[i] = value;
        return;
      }
    }
  }

  /** Adds (a, b) (with value 0); whether it was absent. */
  add(a: number, b: number): boolean {
    if (this.get(a, b) >= 0) return false;
    this.set(a, b, 0);
    return true;
  }

  /** Empties the table in O(1). */
  clear(): void {
    this.count = 0;
    this.gen++;
    if (this.gen === 0xffffffff) {
      this.gens.fill(0);
      this.gen = 1;
    }
  }

  private grow(): void {
    const { keysA, keysB, values, gens } = this;
    const n = (this.mask + 1) * 2;
    this.keysA = new Int32Array(n);
    this.keysB = new Int32Array(n);
    this.values = new Int32Array(n);
    this.gens = new Uint32Array(n);
    this.mask = n - 1;
    this.count = 0;
    const old = this.gen;
    this.gen = 1;
    for (let i = 0; i < gens.length; i++) if (gens[i] === old) this.set(keysA[i]!, keysB[i]!, values[i]!);
  }
}

function hash(a: number, b: number): number {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca77);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return (h ^ (h >>> 13)) >>> 0;
}
