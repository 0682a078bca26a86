import { describe, expect, it } from "vitest";
import type { ConstraintVocab, TokenConstraint } from "../constraint.js";
import { SamplerError } from "../errors.js";
import { Grammar } from "./grammar.js";

/** A small vocabulary: token i spells `pieces[i]` (strings, or raw bytes); `null` is a control token. */
class ListVocab implements ConstraintVocab {
  private readonly bytes: Uint8Array[];
  constructor(
    pieces: readonly (string | number[] | null)[],
    private readonly eog: ReadonlySet<number>,
  ) {
    const enc = new TextEncoder();
    this.bytes = pieces.map((p) =>
      p === null ? new Uint8Array(0) : typeof p === "string" ? enc.encode(p) : Uint8Array.from(p),
    );
  }
  get size(): number {
    return this.bytes.length;
  }
  tokenBytes(id: number): Uint8Array {
    return this.bytes[id]!;
  }
  isEog(id: number): boolean {
    return this.eog.has(id);
  }
}

/** The tokens `mask` leaves finite. */
function allowedByMask(c: TokenConstraint, size: number): number[] {
  const logits = new Float32Array(size);
  c.mask(logits);
  return [...logits.keys()].filter((i) => logits[i] !== -Infinity);
}

function allowedByAllows(c: TokenConstraint, size: number): number[] {
  return [...Array(size).keys()].filter((i) => c.allows(i));
}

const EOS = 0;
const CTRL = 1;
//            0     1     2    3     4      5     6     7      8       9           10           11        12
const PIECES = [
  null,
  null,
  "{",
  "}",
  '"a',
  '":',
  "1",
  "1}",
  'a"}',
  [0xe3],
  [0x81, 0x82],
  [0xe3, 0x81],
  [0x82],
];

describe("GrammarConstraint on a small vocabulary", () => {
  const vocab = new ListVocab(PIECES, new Set([EOS]));
  const json = Grammar.parse('root ::= "{" ( "\\"" [a-z]+ "\\":" [0-9]+ )? "}"');

  it("allows tokens that span several elements, and EOG only once complete", () => {
    const c = json.constraint(vocab);
    expect(allowedByMask(c, vocab.size)).toEqual([2]);
    c.accept(2); // {
    expect(allowedByMask(c, vocab.size)).toEqual([3, 4]); // "}" or '"a'
    c.accept(4);
    expect(allowedByMask(c, vocab.size)).toEqual([5]); // not 'a"}': a number must come first
    c.accept(5);
    expect(allowedByMask(c, vocab.size)).toEqual([6, 7]);
    expect(c.isComplete()).toBe(false);
    c.accept(7); // 1}
    expect(c.isComplete()).toBe(true);
    expect(c.isExhausted()).toBe(true);
    expect(allowedByMask(c, vocab.size)).toEqual([EOS]);
    c.accept(EOS);
    c.reset();
    expect(c.isComplete()).toBe(false);
    expect(allowedByMask(c, vocab.size)).toEqual([2]);
  });

  it("never allows a control token with no bytes, and refuses what it does not allow", () => {
    const c = json.constraint(vocab);
    expect(c.allows(CTRL)).toBe(false);
    expect(c.allows(EOS)).toBe(false);
    expect(c.allows(-1)).toBe(false);
    expect(c.allows(vocab.size)).toBe(false);
    for (const t of [CTRL, EOS, 3, 99]) {
      let err: unknown;
      try {
        c.accept(t);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SamplerError);
      expect((err as SamplerError).code).toBe("GRAMMAR_REJECTED");
    }
    c.accept(2); // the state is unchanged by the refusals
    expect(c.allows(3)).toBe(true);
  });

  it("keeps a partial UTF-8 character across tokens", () => {
    const jp = Grammar.parse("root ::= [ぁ-ゟ]+"); // あ is E3 81 82
    const c = jp.constraint(vocab);
    expect(allowedByMask(c, vocab.size)).toEqual([9, 11]); // E3, E3 81: both can still become hiragana
    c.accept(9);
    expect(c.isComplete()).toBe(false);
    expect(c.isExhausted()).toBe(false);
    expect(allowedByMask(c, vocab.size)).toEqual([10, 12]); // 81 82 completes あ; E3 82 may become U+3080–U+309F
    c.accept(10);
    expect(c.isComplete()).toBe(true);
    expect(allowedByMask(c, vocab.size)).toEqual([EOS, 9, 11]);
    c.accept(11);
    expect(allowedByMask(c, vocab.size)).toEqual([12]);
    expect(c.allows(EOS)).toBe(false);
  });

  it("refuses a partial character that cannot complete to an allowed code point", () => {
    const latin = Grammar.parse("root ::= [a-z]+ | [\\u0100-\\u01ff]"); // no U+3000s
    const c = latin.constraint(vocab);
    expect(c.allows(9)).toBe(false);
    expect(c.allows(11)).toBe(false);
    expect(allowedByMask(c, vocab.size)).toEqual([]);
  });

  it("agrees between allows and mask in every state of a walk", () => {
    const c = json.constraint(vocab);
    const fresh = json.constraint(vocab);
    for (const t of [2, 4, 5, 6, 3]) {
      expect(allowedByAllows(fresh, vocab.size)).toEqual(allowedByMask(c, vocab.size));
      c.accept(t);
      fresh.accept(t);
    }
  });
});
