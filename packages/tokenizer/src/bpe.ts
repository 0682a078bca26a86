import { BYTE_TO_CHAR, CHAR_TO_BYTE } from "./byte-map.js";
import { TokenizerError } from "./errors.js";
import { type PreTokenizer, preTokenize } from "./pre-tokenizers.js";
import { TokenType, type Vocab } from "./vocab.js";

/** Pieces longer than this (in symbols) merge with a heap instead of repeated scans. */
const SCAN_LIMIT = 48;
/** Most entries kept in the piece → ids cache before it is cleared. */
const CACHE_LIMIT = 1 << 16;

const utf8 = new TextEncoder();

/**
 * Byte-level BPE (`tokenizer.ggml.model = "gpt2"`): text is pre-tokenized into pieces, each piece's
 * UTF-8 bytes become GPT-2 byte characters, and the merges are applied lowest rank first
 * (leftmost first among equal ranks).
 */
export class BpeEncoder {
  readonly #vocab: Vocab;
  readonly #pre: PreTokenizer;
  /** (left id · nVocab + right id) → rank; and the same key → merged id. */
  readonly #rank = new Map<number, number>();
  readonly #merged = new Map<number, number>();
  readonly #byteIds: Int32Array;
  readonly #cache = new Map<string, readonly number[]>();

  constructor(vocab: Vocab, pre: PreTokenizer) {
    this.#vocab = vocab;
    this.#pre = pre;
    const n = vocab.tokens.length;
    const merges = vocab.merges ?? [];
    for (let r = 0; r < merges.length; r++) {
      const m = merges[r]!;
      const sp = m.indexOf(" ", 1);
      const left = vocab.ids.get(m.slice(0, sp));
      const right = vocab.ids.get(m.slice(sp + 1));
      const both = vocab.ids.get(m.slice(0, sp) + m.slice(sp + 1));
      if (sp < 0 || left === undefined || right === undefined || both === undefined) {
        throw new TokenizerError("BAD_VOCAB", `merge #${r} "${m}" does not join two tokens into a token`, {
          detail: "tokenizer.ggml.merges",
        });
      }
      const key = left * n + right;
      if (!this.#rank.has(key)) {
        this.#rank.set(key, r);
        this.#merged.set(key, both);
      }
    }
    this.#byteIds = new Int32Array(256).fill(-1);
    for (let b = 0; b < 256; b++) this.#byteIds[b] = vocab.ids.get(BYTE_TO_CHAR[b]!) ?? -1;
  }

  /** Encodes one raw text fragment (special tokens already split out) and appends the ids to `out`. */
  encode(text: string, out: number[]): void {
    for (const piece of preTokenize(this.#pre, text)) {
      const cached = this.#cache.get(piece);
      if (cached) {
        for (const id of cached) out.push(id);
        continue;
      }
      const ids = this.#encodePiece(piece);
      if (piece.length <= 64) {
        if (this.#cache.size >= CACHE_LIMIT) this.#cache.clear();
        this.#cache.set(piece, ids);
      }
      for (const id of ids) out.push(id);
    }
  }

  #encodePiece(piece: string): number[] {
    const bytes = utf8.encode(piece);
    let mapped = "";
    for (const b of bytes) mapped += BYTE_TO_CHAR[b];
    if (this.#pre.ignoreMerges) {
      const whole = this.#vocab.ids.get(mapped);
      if (whole !== undefined) return [whole];
    }
    // Initial symbols: one per byte character (every byte character is a token in these vocabularies).
    const syms: number[] = new Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) {
      const id = this.#byteIds[bytes[i]!]!;
      if (id < 0) return this.#unknownBytes(bytes);
      syms[i] = id;
    }
    return syms.length <= SCAN_LIMIT ? this.#mergeByScan(syms) : this.#mergeByHeap(syms);
  }

  #unknownBytes(bytes: Uint8Array): number[] {
    const unk = this.#vocab.special.unk;
    const out: number[] = [];
    for (const b of bytes) {
      const id = this.#byteIds[b]!;
      if (id >= 0) out.push(id);
      else if (unk !== undefined) out.push(unk);
      else {
        throw new TokenizerError(
          "BAD_VOCAB",
          `byte 0x${b.toString(16)} has no token and the vocabulary has no unknown token`,
        );
      }
    }
    return out;
  }

  /** Short pieces: find the lowest-ranked adjacent pair by scanning, merge, repeat. */
  #mergeByScan(syms: number[]): number[] {
    const n = this.#vocab.tokens.length;
    for (;;) {
      let best = -1;
      let bestRank = Number.POSITIVE_INFINITY;
      for (let i = 0; i + 1 < syms.length; i++) {
        const r = this.#rank.get(syms[i]! * n + syms[i + 1]!);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) return syms;
      syms.splice(best, 2, this.#merged.get(syms[best]! * n + syms[best + 1]!)!);
    }
  }

  /** Long pieces: a doubly linked list of symbols and a min-heap of candidate pairs (rank, position). */
  #mergeByHeap(initial: number[]): number[] {
    const n = this.#vocab.tokens.length;
    const len = initial.length;
    const sym = Int32Array.from(initial);
    const prev = new Int32Array(len);
    const next = new Int32Array(len);
    for (let i = 0; i < len; i++) {
      prev[i] = i - 1;
      next[i] = i + 1 < len ? i + 1 : -1;
    }
    // Heap entries: [rank, left position, left id, right id] (ids detect stale entries).
    const heap: number[][] = [];
    const less = (a: number[], b: number[]) => a[0]! < b[0]! || (a[0] === b[0] && a[1]! < b[1]!);
    const push = (e: number[]) => {
      heap.push(e);
      let i = heap.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!less(heap[i]!, heap[p]!)) break;
        [heap[i], heap[p]] = [heap[p]!, heap[i]!];
        i = p;
      }
    };
    const pop = (): number[] => {
      const top = heap[0]!;
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
          if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m]!, heap[i]!];
          i = m;
        }
      }
      return top;
    };
    const consider = (i: number) => {
      const j = next[i]!;
      if (i < 0 || j < 0) return;
      const r = this.#rank.get(sym[i]! * n + sym[j]!);
      if (r !== undefined) push([r, i, sym[i]!, sym[j]!]);
    };
    for (let i = 0; i + 1 < len; i++) consider(i);
    while (heap.length > 0) {
      const [, i, a, b] = pop() as [number, number, number, number];
      const j = next[i]!;
      if (sym[i] !== a || j < 0 || sym[j] !== b) continue; // stale
      sym[i] = this.#merged.get(a * n + b)!;
      sym[j] = -1;
      next[i] = next[j]!;
      if (next[j]! >= 0) prev[next[j]!] = i;
      consider(prev[i]!);
      consider(i);
    }
    const out: number[] = [];
    for (let i = 0; i >= 0; i = next[i]!) out.push(sym[i]!);
    return out;
  }
}

/** The bytes a byte-level BPE token stands for (its text mapped back through GPT-2's byte alphabet). */
export function bpeTokenBytes(vocab: Vocab, id: number): Uint8Array {
  const text = vocab.tokens[id]!;
  const t = vocab.types[id];
  if (t === TokenType.USER_DEFINED || t === TokenType.CONTROL) return utf8.encode(text);
  const out: number[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const b = cp < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[cp]! : -1;
    if (b >= 0) out.push(b);
    else for (const x of utf8.encode(ch)) out.push(x);
  }
  return Uint8Array.from(out);
}
