// Helpers shared by the i-quant decoders (iq1.ts, iq2.ts, iq3.ts): little-endian reads and the
// lazy unpacking of the grid tables of iq-grids.ts into byte arrays.

/** Reads the little-endian u32 at `o` of `b` (any alignment). */
export function readU32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

/**
 * Unpacks a grid written as whitespace-separated hexadecimal integers of `width` bytes each
 * (`0x` and exactly 2·width digits) into `entries`·`width` bytes: entry i's byte j — its j-th
 * value — is byte j, counted from the least significant, of the i-th integer. That is how ggml
 * reads an entry: `(const uint8_t *)(grid + i)` on a little-endian machine.
 */
function unpackGrid(text: string, width: number, entries: number): Uint8Array {
  const tokens = text.trim().split(/\s+/);
  if (tokens.length !== entries) throw new Error(`grid has ${tokens.length} entries, expected ${entries}`);
  const out = new Uint8Array(entries * width);
  for (let i = 0; i < entries; i++) {
    const t = tokens[i];
    if (!/^0x[0-9a-f]+$/.test(t) || t.length !== 2 + 2 * width) throw new Error(`bad grid entry ${t}`);
    for (let j = 0; j < width; j++) {
      const at = t.length - 2 * (j + 1);
      out[i * width + j] = Number.parseInt(t.slice(at, at + 2), 16);
    }
  }
  return out;
}

/**
 * A getter for the unpacked bytes of a grid, built on the first call and kept (the largest,
 * iq1s_grid, is 16 KiB), so that importing the package costs nothing until an i-quant is read.
 */
export function lazyGrid(text: string, width: number, entries: number): () => Uint8Array {
  let bytes: Uint8Array | undefined;
  return () => {
    bytes ??= unpackGrid(text, width, entries);
    return bytes;
  };
}

/**
 * Writes `n` values of one grid row: out[y + k] = ±(scale·grid[g + k]), rounded to f32 as ggml's
 * float product is, and negated where bit `bit0 + k` of the sign byte `signs` is set.
 */
export function putSignedRow(
  out: Float32Array,
  y: number,
  scale: number,
  grid: Uint8Array,
  g: number,
  n: number,
  signs: number,
  bit0: number,
): void {
  for (let k = 0; k < n; k++) {
    const v = Math.fround(scale * grid[g + k]);
    out[y + k] = (signs >> (bit0 + k)) & 1 ? -v : v;
  }
}
