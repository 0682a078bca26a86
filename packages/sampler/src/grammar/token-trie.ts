import type { ConstraintVocab } from "../constraint.js";

/**
 * The byte strings of every token of a vocabulary as a trie laid out in depth-first preorder:
 * node 0 is the root, node `i`'s first child (if any) is `i + 1`, and its subtree ends before
 * `end[i]`, so a walk can skip a whole subtree in one step. Tokens with no bytes are not in it.
 */
export interface TokenTrie {
  readonly nodeCount: number;
  /** The byte on the edge into each node. */
  readonly byte: Uint8Array;
  /** Each node's depth (the length of its byte string). */
  readonly depth: Uint16Array;
  /** One past the last node of each node's subtree. */
  readonly end: Int32Array;
  /** The tokens spelled by each node: `ids[first[i]]` onward, `count[i]` of them. */
  readonly first: Int32Array;
  readonly count: Int32Array;
  readonly ids: Int32Array;
  /** The longest token, in bytes. */
  readonly maxDepth: number;
}

/** What a constraint keeps per vocabulary (built once, shared through a WeakMap). */
export interface VocabIndex {
  readonly size: number;
  readonly trie: TokenTrie;
  readonly bytes: readonly Uint8Array[];
  /** End-of-generation token ids. */
  readonly eog: Int32Array;
  readonly isEog: Uint8Array;
}

const cache = new WeakMap<ConstraintVocab, VocabIndex>();

/** The {@link VocabIndex} of `vocab`, built on first use and cached for the vocab object. */
export function vocabIndex(vocab: ConstraintVocab): VocabIndex {
  let index = cache.get(vocab);
  if (!index) {
    const bytes: Uint8Array[] = [];
    const isEog = new Uint8Array(vocab.size);
    const eog: number[] = [];
    for (let id = 0; id < vocab.size; id++) {
      bytes.push(vocab.tokenBytes(id));
      if (vocab.isEog(id)) {
        isEog[id] = 1;
        eog.push(id);
      }
    }
    index = { size: vocab.size, trie: buildTrie(bytes), bytes, eog: Int32Array.from(eog), isEog };
    cache.set(vocab, index);
  }
  return index;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** Builds the preorder trie of the non-empty byte strings `bytes[id]`. */
export function buildTrie(bytes: readonly Uint8Array[]): TokenTrie {
  const order: number[] = [];
  let total = 1;
  for (let id = 0; id < bytes.length; id++) {
    if (bytes[id]!.length > 0) {
      order.push(id);
      total += bytes[id]!.length;
    }
  }
  order.sort((a, b) => compareBytes(bytes[a]!, bytes[b]!) || a - b);

  const byte = new Uint8Array(total);
  const depth = new Uint16Array(total);
  const end = new Int32Array(total);
  const first = new Int32Array(total).fill(-1);
  const count = new Int32Array(total);
  const ids = Int32Array.from(order);
  // path[d]: the node at depth d on the current branch.
  const path: number[] = [0];
  let n = 1;
  let prev: Uint8Array = new Uint8Array(0);
  let maxDepth = 0;
  order.forEach((id, k) => {
    const b = bytes[id]!;
    maxDepth = Math.max(maxDepth, b.length);
    let lcp = 0;
    while (lcp < b.length && lcp < prev.length && b[lcp] === prev[lcp]) lcp++;
    while (path.length - 1 > lcp) end[path.pop()!] = n;
    for (let d = lcp; d < b.length; d++) {
      byte[n] = b[d]!;
      depth[n] = d + 1;
      path.push(n++);
    }
    const leaf = path[path.length - 1]!;
    if (first[leaf] === -1) first[leaf] = k;
    count[leaf]!++;
    prev = b;
  });
  while (path.length > 0) end[path.pop()!] = n;
  return {
    nodeCount: n,
    byte: byte.subarray(0, n),
    depth: depth.subarray(0, n),
    end: end.subarray(0, n),
    first: first.subarray(0, n),
    count: count.subarray(0, n),
    ids,
    maxDepth,
  };
}
