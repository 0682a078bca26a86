// A SentencePiece `tokenizer.model` (the ModelProto of sentencepiece_model.proto) read without a
// protobuf library: only the fields a GGUF vocabulary needs, every read bounds-checked, unknown
// fields skipped by wire type.
import { ConvertError } from "./errors.js";

/** SentencePiece.Type (the same numbers as `tokenizer.ggml.token_type`). */
export const PieceType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** TrainerSpec.ModelType. */
export const SpmModelType = { UNIGRAM: 1, BPE: 2, WORD: 3, CHAR: 4 } as const;

export interface SpmPiece {
  piece: string;
  score: number;
  type: number;
}

export interface SentencePieceModel {
  pieces: SpmPiece[];
  /** TrainerSpec.model_type (default UNIGRAM). */
  modelType: number;
  /** TrainerSpec.byte_fallback (default false). */
  byteFallback: boolean;
  /** NormalizerSpec.name ("" when absent). */
  normalizerName: string;
  /** Bytes of NormalizerSpec.precompiled_charsmap (0 when absent). */
  charsmapBytes: number;
  /** NormalizerSpec.add_dummy_prefix (default true). */
  addDummyPrefix: boolean;
  /** NormalizerSpec.remove_extra_whitespaces (default true). */
  removeExtraWhitespaces: boolean;
  /** NormalizerSpec.escape_whitespaces (default true). */
  escapeWhitespaces: boolean;
  /** TrainerSpec.treat_whitespace_as_suffix (default false). */
  whitespaceAsSuffix: boolean;
}

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    readonly where: string,
    readonly start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  bad(why: string): ConvertError {
    return new ConvertError("BAD_TOKENIZER", `${this.where}: not a valid SentencePiece model: ${why}`);
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw this.bad(`truncated varint at byte ${this.pos}`);
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    throw this.bad(`varint longer than 10 bytes at byte ${this.pos}`);
  }

  /** A field key: [field number, wire type]. */
  key(): [number, number] {
    const k = this.varint();
    return [Math.floor(k / 8), k % 8];
  }

  bytes(): [number, number] {
    const n = this.varint();
    if (this.pos + n > this.end)
      throw this.bad(`a field of ${n} bytes at byte ${this.pos} runs past its end`);
    const at = this.pos;
    this.pos += n;
    return [at, at + n];
  }

  fixed32(): number {
    if (this.pos + 4 > this.end) throw this.bad(`truncated float at byte ${this.pos}`);
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 4).getFloat32(0, true);
    this.pos += 4;
    return v;
  }

  skip(wire: number): void {
    if (wire === VARINT) this.varint();
    else if (wire === FIXED64) this.advance(8);
    else if (wire === LEN) this.bytes();
    else if (wire === FIXED32) this.advance(4);
    else throw this.bad(`wire type ${wire} at byte ${this.pos} is not one protobuf has (or is a group)`);
  }

  advance(n: number): void {
    if (this.pos + n > this.end) throw this.bad(`truncated field at byte ${this.pos}`);
    this.pos += n;
  }

  sub([a, b]: [number, number]): Reader {
    return new Reader(this.buf, this.where, a, b);
  }
}

// ignoreBOM: a piece may be U+FEFF itself (Llama 2's vocabulary has it).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function text(r: Reader, [a, b]: [number, number], what: string): string {
  try {
    return utf8.decode(r.buf.subarray(a, b));
  } catch {
    throw r.bad(`${what} is not valid UTF-8`);
  }
}

function piece(r: Reader, index: number): SpmPiece {
  let p: string | undefined;
  let score = 0;
  let type: number = PieceType.NORMAL;
  while (!r.done) {
    const [field, wire] = r.key();
    if (field === 1 && wire === LEN) p = text(r, r.bytes(), `piece ${index}`);
    else if (field === 2 && wire === FIXED32) score = r.fixed32();
    else if (field === 3 && wire === VARINT) type = r.varint();
    else r.skip(wire);
  }
  if (p === undefined) throw r.bad(`piece ${index} has no text`);
  if (type < PieceType.NORMAL || type > PieceType.BYTE) throw r.bad(`piece ${index} has type ${type}`);
  return { piece: p, score, type };
}

/** Parses the bytes of a `tokenizer.model`; `where` names the file in errors. */
export function parseSentencePieceModel(buf: Uint8Array, where: string): SentencePieceModel {
  const m: SentencePieceModel = {
    pieces: [],
    modelType: SpmModelType.UNIGRAM,
    byteFallback: false,
    normalizerName: "",
    charsmapBytes: 0,
    addDummyPrefix: true,
    removeExtraWhitespaces: true,
    escapeWhitespaces: true,
    whitespaceAsSuffix: false,
  };
  const r = new Reader(buf, where);
  while (!r.done) {
    const [field, wire] = r.key();
    if (field === 1 && wire === LEN) m.pieces.push(piece(r.sub(r.bytes()), m.pieces.length));
    else if (field === 2 && wire === LEN) {
      const t = r.sub(r.bytes());
      while (!t.done) {
        const [f, w] = t.key();
        if (f === 3 && w === VARINT) m.modelType = t.varint();
        else if (f === 24 && w === VARINT) m.whitespaceAsSuffix = t.varint() !== 0;
        else if (f === 35 && w === VARINT) m.byteFallback = t.varint() !== 0;
        else t.skip(w);
      }
    } else if (field === 3 && wire === LEN) {
      const n = r.sub(r.bytes());
      while (!n.done) {
        const [f, w] = n.key();
        if (f === 1 && w === LEN) m.normalizerName = text(n, n.bytes(), "normalizer_spec.name");
        else if (f === 2 && w === LEN) {
          const [a, b] = n.bytes();
          m.charsmapBytes = b - a;
        } else if (f === 3 && w === VARINT) m.addDummyPrefix = n.varint() !== 0;
        else if (f === 4 && w === VARINT) m.removeExtraWhitespaces = n.varint() !== 0;
        else if (f === 5 && w === VARINT) m.escapeWhitespaces = n.varint() !== 0;
        else n.skip(w);
      }
    } else r.skip(wire);
  }
  if (m.pieces.length === 0) throw r.bad("it has no pieces");
  return m;
}
