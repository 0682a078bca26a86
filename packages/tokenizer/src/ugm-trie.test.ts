import { describe, expect, it } from "vitest";
import { seeded } from "./random-text.js";
import { ByteTrie } from "./ugm-trie.js";

/** A trie of `keys` (in order), each mapped to its index. */
function trieOf(keys: readonly Uint8Array[]): ByteTrie {
  const bytes = new Uint8Array(keys.reduce((n, k) => n + k.length, 0));
  const starts = new Int32Array(keys.length);
  const ends = new Int32Array(keys.length);
  let at = 0;
  keys.forEach((k, i) => {
    starts[i] = at;
    bytes.set(k, at);
    at += k.length;
    ends[i] = at;
  });
  return new ByteTrie({ bytes, starts, ends, values: Int32Array.from(keys, (_, i) => i) });
}

/** The node reached along `key`, or -1. */
function walk(trie: ByteTrie, key: readonly number[]): number {
  let node = 0;
  for (const b of key) {
    node = trie.child(node, b);
    if (node === -1) return -1;
  }
  return node;
}

describe("ByteTrie", () => {
  it("finds every key and every prefix of one, and nothing else", () => {
    const rand = seeded(3);
    const keys: Uint8Array[] = [];
    const last = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      // Few distinct bytes, so keys share prefixes and repeat; some bytes above 0x7f.
      const key = Uint8Array.from({ length: Math.floor(rand() * 6) }, () => Math.floor(rand() * 8) * 37);
      keys.push(key);
      if (key.length > 0) last.set(key.join(","), i);
    }
    const trie = trieOf(keys);
    const prefixes = new Set<string>();
    for (const k of last.keys()) {
      const b = k.split(",").map(Number);
      for (let n = 1; n <= b.length; n++) prefixes.add(b.slice(0, n).join(","));
    }
    // Nodes: the root and one per distinct prefix.
    expect(trie.size).toBe(prefixes.size + 1);
    // A repeated key maps to its last index; an empty key is none.
    for (const [k, v] of last) expect(trie.values[walk(trie, k.split(",").map(Number))]).toBe(v);
    expect(trie.values[0]).toBe(-1);
    let wrong = 0;
    for (const p of ["", ...prefixes]) {
      const path = p === "" ? [] : p.split(",").map(Number);
      const node = walk(trie, path);
      if (p !== "") expect(node).toBeGreaterThan(0);
      if (p !== "" && !last.has(p)) expect(trie.values[node]).toBe(-1);
      // Every byte leads on exactly where some key continues that way.
      for (let b = 0; b < 256; b++) {
        if ((trie.child(node, b) !== -1) !== prefixes.has([...path, b].join(","))) wrong++;
      }
    }
    expect(wrong).toBe(0);
  });

  it("orders bytes as bytes, above 0x7f included", () => {
    const keys = [[0xe2, 0x96, 0x81], [0x80], [0x7f, 0xff], [0xff], [0x00]].map((k) => Uint8Array.from(k));
    const trie = trieOf(keys);
    keys.forEach((k, i) => {
      expect(trie.values[walk(trie, [...k])]).toBe(i);
    });
    expect(walk(trie, [0xe2, 0x96, 0x82])).toBe(-1);
  });
});
