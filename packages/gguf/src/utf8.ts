/**
 * Strict UTF-8 decoding: returns `undefined` for an invalid sequence (overlong forms, surrogates,
 * code points past U+10FFFF, truncated sequences) instead of substituting U+FFFD. Short strings —
 * nearly every vocabulary entry — are decoded by hand, which is several times faster than calling
 * TextDecoder on a subarray per token.
 */
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** 0 when bytes[start, end) are not valid UTF-8, 1 when they are, 2 when they are plain ASCII. */
function validate(bytes: Uint8Array, start: number, end: number): 0 | 1 | 2 {
  let ascii = true;
  let i = start;
  while (i < end) {
    const b0 = bytes[i]!;
    if (b0 < 0x80) {
      i += 1;
      continue;
    }
    ascii = false;
    let len: number;
    let cp: number;
    let min: number;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      len = 2;
      cp = b0 & 0x1f;
      min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      len = 3;
      cp = b0 & 0x0f;
      min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      len = 4;
      cp = b0 & 0x07;
      min = 0x10000;
    } else {
      return 0;
    }
    if (i + len > end) return 0;
    for (let k = 1; k < len; k++) {
      const b = bytes[i + k]!;
      if ((b & 0xc0) !== 0x80) return 0;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    i += len;
  }
  return ascii ? 2 : 1;
}

interface NodeBufferLike {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}
type BufferCtor = { from(a: ArrayBufferLike, o: number, l: number): NodeBufferLike };
const NodeBuffer = (globalThis as unknown as { Buffer?: BufferCtor }).Buffer;

/**
 * Decodes many short UTF-8 strings out of one byte array. Strings are validated strictly
 * (`undefined` for overlong forms, surrogates, code points past U+10FFFF or truncated sequences,
 * never U+FFFD). Under Node, an ASCII string is cut out of one latin1 decoding of a whole region
 * and others are sliced by Buffer, several times faster per vocabulary entry than TextDecoder.
 */
export class Utf8Reader {
  readonly #bytes: Uint8Array;
  readonly #buf: NodeBufferLike | undefined;
  #region = "";
  #regionStart = 0;
  #regionEnd = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#buf = NodeBuffer?.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Decodes the byte range [start, end) of a region that the caller will read many strings from. */
  prepareRegion(start: number, end: number): void {
    if (!this.#buf || end - start < 4096) return;
    this.#region = this.#buf.latin1Slice(start, end);
    this.#regionStart = start;
    this.#regionEnd = end;
  }

  decode(start: number, end: number): string | undefined {
    const kind = validate(this.#bytes, start, end);
    if (kind === 0) return undefined;
    const buf = this.#buf;
    if (!buf) return decoder.decode(this.#bytes.subarray(start, end));
    if (kind === 1) return buf.utf8Slice(start, end);
    if (start >= this.#regionStart && end <= this.#regionEnd) {
      return this.#region.substring(start - this.#regionStart, end - this.#regionStart);
    }
    return buf.latin1Slice(start, end);
  }
}

const encoder = new TextEncoder();

/** UTF-8 bytes of a string. */
export function encodeUtf8(s: string): Uint8Array {
  return encoder.encode(s);
}
