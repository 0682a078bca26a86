// A static byte trie over token texts (UTF-8), built once from all keys: a 250k-token vocabulary
// makes a few million nodes, too many for an object or a Map per node. Nodes are laid out
// breadth-first, so the children of a node are consecutive nodes with increasing labels; a lookup
// searches that run (the root, which has the most children, by a direct table). The build sorts
// the keys one byte position at a time, within each node's range (an MSD radix sort).

/** A key to build from: bytes[start, end), and the value it maps to. */
export interface TrieKeys {
  readonly bytes: Uint8Array;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly values: Int32Array;
}

/** Ranges up to this size are sorted by insertion, larger ones by counting. */
const SMALL = 16;

function grow<T extends Int32Array | Uint16Array | Uint8Array>(a: T, need: number): T {
  if (a.length >= need) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}

export class ByteTrie {
  /** Value at each node; -1 where no key ends. Node 0 is the root. */
  readonly values: Int32Array;
  /** First child of each node (children are consecutive), and how many it has. */
  readonly #first: Int32Array;
  readonly #count: Uint16Array;
  /** The byte leading to each node. */
  readonly #label: Uint8Array;
  /** Child of the root by byte; -1 where none. */
  readonly #root = new Int32Array(256).fill(-1);

  /**
   * Builds the trie of `keys`. Empty keys are left out. Where a key occurs twice, the later one's
   * value wins (as in llama.cpp's trie, filled in key order).
   */
  constructor(keys: TrieKeys) {
    const { bytes, starts, ends } = keys;
    const order: number[] = [];
    for (let k = 0; k < starts.length; k++) if (ends[k]! > starts[k]!) order.push(k);
    const keyOrder = Int32Array.from(order);
    const m = keyOrder.length;
    const scratch = new Int32Array(m);
    const counts = new Int32Array(258);
    /** Byte `d` of key k, or -1 where the key ends before it. */
    const byteAt = (k: number, d: number) => (starts[k]! + d < ends[k]! ? bytes[starts[k]! + d]! : -1);

    let cap = Math.max(16, Math.min(m * 4, 1 << 20));
    let values = new Int32Array(cap);
    let first = new Int32Array(cap); // a node's range start until it is processed, then its first child
    let hi = new Int32Array(cap); // a node's range end
    let count = new Uint16Array(cap);
    let label = new Uint8Array(cap);
    hi[0] = m;
    let next = 1;
    let depth = 0;
    let levelEnd = 1;
    for (let n = 0; n < next; n++) {
      if (n === levelEnd) {
        depth++;
        levelEnd = next;
      }
      const lo = first[n]!;
      const end = hi[n]!;
      // Order keyOrder[lo, end) by the byte at `depth`; keys that end here come first.
      if (end - lo <= SMALL) {
        for (let i = lo + 1; i < end; i++) {
          const k = keyOrder[i]!;
          const b = byteAt(k, depth);
          let j = i - 1;
          while (j >= lo && byteAt(keyOrder[j]!, depth) > b) {
            keyOrder[j + 1] = keyOrder[j]!;
            j--;
          }
          keyOrder[j + 1] = k;
        }
      } else {
        counts.fill(0);
        for (let i = lo; i < end; i++) counts[byteAt(keyOrder[i]!, depth) + 2]!++;
        for (let c = 1; c < 258; c++) counts[c]! += counts[c - 1]!;
        for (let i = lo; i < end; i++) {
          const k = keyOrder[i]!;
          scratch[lo + counts[byteAt(k, depth) + 1]!++] = k;
        }
        keyOrder.set(scratch.subarray(lo, end), lo);
      }
      values[n] = -1;
      let i = lo;
      // Keys that end here: the latest one's value.
      let latest = -1;
      while (i < end && byteAt(keyOrder[i]!, depth) === -1) latest = Math.max(latest, keyOrder[i++]!);
      if (latest >= 0) values[n] = keys.values[latest]!;
      first[n] = next;
      while (i < end) {
        const c = byteAt(keyOrder[i]!, depth);
        let j = i + 1;
        while (j < end && byteAt(keyOrder[j]!, depth) === c) j++;
        if (next >= cap) {
          cap *= 2;
          values = grow(values, cap);
          first = grow(first, cap);
          hi = grow(hi, cap);
          count = grow(count, cap);
          label = grow(label, cap);
        }
        label[next] = c;
        first[next] = i;
        hi[next] = j;
        if (n === 0) this.#root[c] = next;
        next++;
        i = j;
      }
      count[n] = next - first[n]!;
    }
    this.values = values.slice(0, next);
    this.#first = first.slice(0, next);
    this.#count = count.slice(0, next);
    this.#label = label.slice(0, next);
  }

  /** Number of nodes, the root included. */
  get size(): number {
    return this.values.length;
  }

  /** The child of `node` along `byte`; -1 when there is none. */
  child(node: number, byte: number): number {
    if (node === 0) return this.#root[byte]!;
    const label = this.#label;
    let a = this.#first[node]!;
    let b = a + this.#count[node]!;
    // Binary search over the children's increasing labels.
    while (a < b) {
      const m = (a + b) >>> 1;
      const l = label[m]!;
      if (l === byte) return m;
      if (l < byte) a = m + 1;
      else b = m;
    }
    return -1;
  }
}
