import { GgufMetadata, GgufValueType } from "@minfer/gguf";
import { describe, expect, it } from "vitest";
import { TokenizerError } from "./errors.js";
import { seeded } from "./random-text.js";
import { Tokenizer } from "./tokenizer.js";
import { Charsmap } from "./ugm-charsmap.js";
import { buildCharsmap, buildDoubleArray, CHARSMAP_RULES, ugmFixture } from "./ugm-fixture.js";

const KEY = "tokenizer.ggml.precompiled_charsmap";
const utf8 = new TextEncoder();
const text = new TextDecoder();
const valid = buildCharsmap(CHARSMAP_RULES);

/** A charsmap from a double array and the strings after it. */
function charsmapOf(units: Uint32Array | number[], strings: Uint8Array | number[]): Uint8Array {
  const out = new Uint8Array(4 + units.length * 4 + strings.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, units.length * 4, true);
  Array.from(units).forEach((u, i) => {
    view.setUint32(4 + 4 * i, u, true);
  });
  out.set(strings, 4 + units.length * 4);
  return out;
}

/** The longest rule at the start of `s`: its length in bytes and replacement, or undefined. */
function matchAt(map: Charsmap, s: string): [number, string] | undefined {
  const b = utf8.encode(s);
  const n = map.match(b, 0, b.length);
  return n === 0 ? undefined : [n, text.decode(map.replacement)];
}

function refused(bytes: Uint8Array): TokenizerError | undefined {
  try {
    Charsmap.parse(bytes);
    return undefined;
  } catch (e) {
    if (!(e instanceof TokenizerError)) throw e;
    return e;
  }
}

describe("Charsmap", () => {
  const map = Charsmap.parse(valid);

  it("applies every rule to its key, whatever follows", () => {
    for (const [from, to] of CHARSMAP_RULES) {
      // "\r" followed by "\n" is the longer rule "\r\n"; everything else must stop at its key.
      const after = from === "\r" ? "x" : "\n";
      expect(matchAt(map, from + after), JSON.stringify(from)).toEqual([utf8.encode(from).length, to]);
    }
  });

  it("takes the longest rule, and nothing where no rule starts", () => {
    expect(matchAt(map, "\r\nx")).toEqual([2, " "]);
    expect(matchAt(map, "e\u0301x")).toEqual([3, "é"]);
    // "e" starts a key but is none.
    expect(matchAt(map, "ex")).toBeUndefined();
    expect(matchAt(map, "e")).toBeUndefined();
    expect(matchAt(map, "a")).toBeUndefined();
    expect(matchAt(map, "日")).toBeUndefined();
    // A NUL byte ends matching (SentencePiece's keys never hold one).
    expect(matchAt(map, "\u0000")).toBeUndefined();
    expect(matchAt(map, "\u0000ﬁ")).toBeUndefined();
    // Matching stops at `to`.
    const b = utf8.encode("\r\n");
    expect(map.match(b, 0, 1)).toBe(1);
    expect(map.match(b, 1, 2)).toBe(1);
    expect(map.match(b, 0, 0)).toBe(0);
  });

  it("maps a rule to an empty replacement", () => {
    expect(matchAt(map, "\u200b")).toEqual([3, ""]);
  });

  it("accepts an empty double array (nothing is normalized), as llama.cpp does", () => {
    const empty = Charsmap.parse(charsmapOf([], [0]));
    expect(empty.match(utf8.encode("ﬁ"), 0, 3)).toBe(0);
  });

  it("lays out a double array as darts-clone does", () => {
    // One key "a" -> 5: the root's children start at base 1, "a" (0x61) is unit 1 ^ 0x61 = 0x60,
    // its children (and value) at base 2: unit 0x60 holds offset 0x60 ^ 2 = 0x62, the leaf flag
    // and label 0x61; unit 2 holds the value with bit 31.
    const units = buildDoubleArray([[utf8.encode("a"), 5]]);
    expect(units.length).toBe(256);
    expect(units[0]).toBe(1 << 10);
    expect(units[0x60]).toBe((0x62 << 10) | 0x100 | 0x61);
    expect(units[2]).toBe((0x80000000 | 5) >>> 0);
  });
});

describe("hostile charsmaps", () => {
  const expectRefused = (bytes: Uint8Array, message: RegExp) => {
    const e = refused(bytes);
    expect(e, `accepted: ${message}`).toBeInstanceOf(TokenizerError);
    expect(e!.code).toBe("BAD_VOCAB");
    expect(e!.detail).toBe(KEY);
    expect(e!.message).toMatch(message);
  };

  it("refuses a map shorter than its header", () => {
    for (let n = 0; n < 4; n++) expectRefused(valid.subarray(0, n), /too short/);
  });

  it("refuses a header that announces more than there is", () => {
    const bytes = valid.slice();
    new DataView(bytes.buffer).setUint32(0, 0xffffffff, true);
    expectRefused(bytes, /announces/);
    // The array filling everything leaves no strings: refused as llama.cpp does.
    expectRefused(charsmapOf(new Uint32Array(256), []), /announces/);
  });

  it("refuses every truncation of a valid map", () => {
    const blob = new DataView(valid.buffer).getUint32(0, true);
    for (let n = 0; n < valid.length; n++) {
      const e = refused(valid.subarray(0, n));
      expect(e, `cut at ${n} of ${valid.length}`).toBeInstanceOf(TokenizerError);
      expect(e!.detail).toBe(KEY);
      // Cut in the strings: a replacement starts past the end or lost its NUL.
      if (n > blob + 4) expect(e!.message).toMatch(/past the end|NUL/);
    }
  });

  it("refuses children past the end of the array", () => {
    // The root's children at 256: the whole array is one block of 256 units.
    const units = new Uint32Array(256);
    units[0] = 256 << 10;
    expectRefused(charsmapOf(units, [0]), /children at unit 256, past the end/);
    // A child of the root (byte "a") whose own children lie past the end.
    const deep = new Uint32Array(256);
    deep[0] = 1 << 10;
    deep[1 ^ 0x61] = ((1 ^ 0x61 ^ 4096) << 10) | 0x61;
    expectRefused(charsmapOf(deep, [0]), /children at unit 4096, past the end/);
    // An array that is no whole number of blocks: children at 290 would be read up to 290 ^ 255.
    const partial = new Uint32Array(300);
    partial[0] = 290 << 10;
    expectRefused(charsmapOf(partial, [0]), /children at unit 290, past the end of the 300-unit/);
    // The same with the shifted-offset encoding (bit 9: offset << 8).
    const shifted = new Uint32Array(256);
    shifted[0] = (1 << 10) | 0x200;
    expectRefused(charsmapOf(shifted, [0]), /children at unit 256, past the end/);
  });

  it("refuses a replacement past the end of the strings, or without its NUL", () => {
    const units = buildDoubleArray([[utf8.encode("a"), 3]]);
    expectRefused(charsmapOf(units, [0x62, 0x63, 0]), /replacement string 3, past the end of the 3 bytes/);
    const fine = Charsmap.parse(charsmapOf(units, [0x62, 0x63, 0, 0x64, 0]));
    expect(matchAt(fine, "a")).toEqual([1, "d"]);
    expectRefused(charsmapOf(units, [0x62, 0x63, 0, 0x64]), /not NUL-terminated/);
  });

  it("refuses a hostile map when the tokenizer is built, naming the key", () => {
    const truncated = valid.subarray(0, valid.length - 1);
    const kvs = ugmFixture("t5-plain").concat({
      key: KEY,
      type: GgufValueType.ARRAY,
      value: { itemType: GgufValueType.INT8, items: new Int8Array(truncated.buffer, 0, truncated.length) },
    });
    expect(() => Tokenizer.fromMetadata(new GgufMetadata(kvs))).toThrow(
      expect.objectContaining({ name: "TokenizerError", code: "BAD_VOCAB", detail: KEY }),
    );
  });

  it("either refuses a corrupted map or tokenizes with it, never failing otherwise", () => {
    const rand = seeded(17);
    const base = ugmFixture("t5-plain");
    const inputs = ["ﬁne ＡＢＣ e\u0301\r\n…\u200b", "plain text", "\u3000\t\u00a0x²", "日本語 🙂"];
    let accepted = 0;
    for (let i = 0; i < 400; i++) {
      const bytes = valid.slice();
      const flips = 1 + Math.floor(rand() * 4);
      for (let k = 0; k < flips; k++) {
        // Mostly the header and the double array, where the offsets are.
        const at = Math.floor(rand() * (rand() < 0.8 ? Math.min(bytes.length, 4 + 4 * 512) : bytes.length));
        bytes[at] = Math.floor(rand() * 256);
      }
      const kvs = base.concat({
        key: KEY,
        type: GgufValueType.ARRAY,
        value: { itemType: GgufValueType.UINT8, items: bytes },
      });
      let tok: Tokenizer;
      try {
        tok = Tokenizer.fromMetadata(new GgufMetadata(kvs));
      } catch (e) {
        expect(e).toBeInstanceOf(TokenizerError);
        expect((e as TokenizerError).detail).toBe(KEY);
        continue;
      }
      accepted++;
      for (const s of inputs) {
        for (const id of tok.encode(s)) expect(Number.isInteger(id) && id >= 0 && id < tok.size).toBe(true);
      }
    }
    // Some corruptions leave a working map (a flipped byte in an unused unit).
    expect(accepted).toBeGreaterThan(0);
  });
});
