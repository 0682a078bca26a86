/**
 * GPT-2's byte-level alphabet: every byte maps to one printable code point (the bytes that are
 * printable Latin-1 map to themselves, the other 68 to U+0100 upward in byte order), so any byte
 * string is a string of "characters" a BPE vocabulary can hold.
 */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = new Array(256);
  let next = 0x100;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(printable(b) ? b : next++);
  return out;
})();

/** The inverse of {@link BYTE_TO_CHAR}: code point → byte, or -1. */
export const CHAR_TO_BYTE: Int16Array = (() => {
  const out = new Int16Array(0x200).fill(-1);
  BYTE_TO_CHAR.forEach((c, b) => {
    out[c.codePointAt(0)!] = b;
  });
  return out;
})();
