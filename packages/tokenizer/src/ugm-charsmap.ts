// The precompiled character map of a SentencePiece Unigram model
// (`tokenizer.ggml.precompiled_charsmap`): the normalization rules (NFKC and friends) compiled
// into a byte-level double-array trie.
//
// Layout, all little-endian:
//   u32  blobSize                      size in bytes of the double array that follows
//   u32  units[blobSize / 4]           darts-clone double-array units
//   u8   strings[...]                  NUL-terminated replacement strings (the rest of the array)
//
// A unit packs: bits 0-7 the label (the input byte that leads to it), bit 8 "a key ends here",
// bit 9 "the offset is stored shifted right by 8", bits 10-30 the offset, and bit 31 marks a value
// unit (whose low 31 bits are the byte offset of a replacement string). From a node whose children
// start at `base`, byte c leads to unit `base ^ c`, and that unit's offset XOR its own index gives
// the base of its children; a key ending there has its value unit at that base (label 0).
//
// A file is untrusted input: every index the matcher can ever compute is checked here, once, so
// a hostile map is refused with a TokenizerError instead of read out of range later.
import { TokenizerError } from "./errors.js";

const KEY = "tokenizer.ggml.precompiled_charsmap";

function bad(message: string): TokenizerError {
  return new TokenizerError("BAD_VOCAB", `${KEY}: ${message}`, { detail: KEY });
}

/** Base of the children of the node reached through `unit`. */
function offsetOf(unit: number): number {
  return ((unit >>> 10) << ((unit & 0x200) >>> 6)) >>> 0;
}

/** The label a unit answers to; a value unit (bit 31) never equals an input byte. */
function labelOf(unit: number): number {
  return (unit & 0x800000ff) >>> 0;
}

/** Longest-prefix replacement of input bytes by the rules of a precompiled charsmap. */
export class Charsmap {
  readonly #units: Uint32Array;
  readonly #strings: Uint8Array;
  /** End (exclusive) of each replacement string, by its start offset. */
  readonly #ends: Map<number, number>;
  /** Length of the last match and where its replacement lies in #strings. */
  matchStart = 0;
  matchEnd = 0;

  private constructor(units: Uint32Array, strings: Uint8Array, ends: Map<number, number>) {
    this.#units = units;
    this.#strings = strings;
    this.#ends = ends;
  }

  /** Parses and checks a charsmap; throws a TokenizerError (`BAD_VOCAB`, naming the key) if it is malformed. */
  static parse(bytes: Uint8Array): Charsmap {
    if (bytes.length < 4) throw bad(`${bytes.length} bytes is too short for its 4-byte header`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const blobSize = view.getUint32(0, true);
    // As llama.cpp requires, at least one byte of replacement strings must follow the array.
    if (blobSize + 4 >= bytes.length) {
      throw bad(
        `its header announces a ${blobSize}-byte double array, but only ${bytes.length - 4} bytes follow (the array and the replacement strings must both fit)`,
      );
    }
    const n = Math.floor(blobSize / 4);
    const units = new Uint32Array(n);
    for (let i = 0; i < n; i++) units[i] = view.getUint32(4 + 4 * i, true);
    const strings = bytes.subarray(4 + blobSize);
    return new Charsmap(units, strings, n === 0 ? new Map() : checkTrie(units, strings));
  }

  /** The replacement of the last successful {@link match}. */
  get replacement(): Uint8Array {
    return this.#strings.subarray(this.matchStart, this.matchEnd);
  }

  /**
   * Length in bytes of the longest rule matching `input` at `from` (0 when none); the
   * replacement is then {@link replacement}. A NUL byte ends matching, as in SentencePiece.
   */
  match(input: Uint8Array, from: number, to: number): number {
    const units = this.#units;
    if (units.length === 0) return 0;
    let length = 0;
    let node = offsetOf(units[0]!);
    for (let p = from; p < to; p++) {
      const c = input[p]!;
      if (c === 0) break;
      node ^= c;
      const unit = units[node]!;
      if (labelOf(unit) !== c) break;
      node ^= offsetOf(unit);
      if ((unit >>> 8) & 1) {
        length = p - from + 1;
        this.matchStart = units[node]! & 0x7fffffff;
      }
    }
    if (length > 0) this.matchEnd = this.#ends.get(this.matchStart)!;
    return length;
  }
}

/**
 * Walks every node reachable from the root and checks that every unit a lookup can touch lies
 * in the array (the whole 256-unit block of each node's children, as darts-clone lays them out)
 * and that every replacement starts inside the strings and is NUL-terminated there. Returns the
 * end of each replacement string.
 */
function checkTrie(units: Uint32Array, strings: Uint8Array): Map<number, number> {
  const n = units.length;
  const ends = new Map<number, number>();
  const seen = new Uint8Array(n);
  const stack: number[] = [];
  const visit = (base: number, path: string) => {
    if ((base | 0xff) >= n) {
      throw bad(`a node${path} has its children at unit ${base}, past the end of the ${n}-unit double array`);
    }
    if (!seen[base]) {
      seen[base] = 1;
      stack.push(base);
    }
  };
  visit(offsetOf(units[0]!), "");
  while (stack.length > 0) {
    const base = stack.pop()!;
    for (let c = 1; c < 256; c++) {
      const unit = units[base ^ c]!;
      if (labelOf(unit) !== c) continue;
      const child = (base ^ c ^ offsetOf(unit)) >>> 0;
      visit(child, ` (unit ${base ^ c})`);
      if (!((unit >>> 8) & 1)) continue;
      const at = units[child]! & 0x7fffffff;
      if (ends.has(at)) continue;
      if (at >= strings.length) {
        throw bad(
          `unit ${child} points at replacement string ${at}, past the end of the ${strings.length} bytes of strings`,
        );
      }
      const end = strings.indexOf(0, at);
      if (end < 0) throw bad(`the replacement string at ${at} is not NUL-terminated`);
      ends.set(at, end);
    }
  }
  return ends;
}
