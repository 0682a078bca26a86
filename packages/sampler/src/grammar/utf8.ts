/**
 * Strict incremental UTF-8 decoding, one byte at a time, for tokens that end inside a character.
 *
 * A character under way is packed into one positive integer, `(v << 5) | (need << 3) | cls`: the
 * bits `v` read so far, the continuation bytes still `need`ed (1 to 3), and which range the next
 * byte must fall in (`cls`: 0 for 80–BF, else the narrower second-byte ranges that rule out
 * overlong forms, surrogates and code points past U+10FFFF). 0 means no character is under way.
 */

/** No character under way. */
export const NO_PARTIAL = 0;
/** {@link utf8Step}: the byte cannot continue valid UTF-8. */
export const INVALID = -1;

/** The allowed range of the next byte for each `cls`: [lo, hi]. */
const NEXT_LO = [0x80, 0xa0, 0x80, 0x90, 0x80];
const NEXT_HI = [0xbf, 0xbf, 0x9f, 0xbf, 0x8f];

function pack(v: number, need: number, cls: number): number {
  return (v << 5) | (need << 3) | cls;
}

/**
 * Feeds `byte` after the character under way `partial` ({@link NO_PARTIAL} if none). Returns the
 * completed code point (>= 0), {@link INVALID}, or `-p` for a new character under way `p` (<= -8).
 */
export function utf8Step(partial: number, byte: number): number {
  if (partial === NO_PARTIAL) {
    if (byte < 0x80) return byte;
    if (byte < 0xc2) return INVALID; // a continuation byte, or an overlong lead C0/C1
    if (byte < 0xe0) return -pack(byte & 0x1f, 1, 0);
    if (byte < 0xf0) {
      const cls = byte === 0xe0 ? 1 : byte === 0xed ? 2 : 0;
      return -pack(byte & 0x0f, 2, cls);
    }
    if (byte < 0xf5) {
      const cls = byte === 0xf0 ? 3 : byte === 0xf4 ? 4 : 0;
      return -pack(byte & 0x07, 3, cls);
    }
    return INVALID;
  }
  const cls = partial & 7;
  if (byte < NEXT_LO[cls]! || byte > NEXT_HI[cls]!) return INVALID;
  const v = ((partial >>> 5) << 6) | (byte & 0x3f);
  const need = ((partial >>> 3) & 3) - 1;
  return need === 0 ? v : -pack(v, need, 0);
}

/** The lowest code point the character under way `partial` can still become. */
export function partialLow(partial: number): number {
  const cls = partial & 7;
  const need = (partial >>> 3) & 3;
  const v = partial >>> 5;
  return (((v << 6) | (NEXT_LO[cls]! & 0x3f)) << (6 * (need - 1))) >>> 0;
}

/** The highest code point the character under way `partial` can still become. */
export function partialHigh(partial: number): number {
  const cls = partial & 7;
  const need = (partial >>> 3) & 3;
  const v = partial >>> 5;
  const restBits = 6 * (need - 1);
  return ((((v << 6) | (NEXT_HI[cls]! & 0x3f)) << restBits) | ((1 << restBits) - 1)) >>> 0;
}
