import { describe, expect, it } from "vitest";
import { clip, jsonTextNestsDeeperThan, quote } from "./quote.js";

describe("quote", () => {
  it("shows a value JSON-like and bounded", () => {
    expect(quote("x")).toBe('"x"');
    expect(quote(null)).toBe("null");
    expect(quote([1, { a: true }])).toBe('[1, {"a": true}]');
    expect(quote("y".repeat(1000)).length).toBeLessThanOrEqual(81);
    expect(quote(Array.from({ length: 100_000 }, (_, i) => i)).length).toBeLessThanOrEqual(81);
  });

  it("describes deep values instead of serialising them", () => {
    let v: unknown = 1;
    for (let i = 0; i < 100_000; i++) v = [v];
    expect(quote(v)).toBe("[[[[…]]]]");
  });

  it("clips a client's string", () => {
    expect(clip("abc", 2)).toBe("ab…");
    expect(clip("ab", 2)).toBe("ab");
  });
});

describe("jsonTextNestsDeeperThan", () => {
  it("counts brackets outside strings only", () => {
    const depth = (t: string) => {
      let d = 0;
      while (jsonTextNestsDeeperThan(t, d)) d++;
      return d;
    };
    expect(depth("1")).toBe(0);
    expect(depth("[]")).toBe(1);
    expect(depth('{"a":[{"b":[]}]}')).toBe(4);
    expect(depth('{"a":"[[[[{{{{"}')).toBe(1);
    expect(depth('{"a":"\\"[[[","b":"\\\\"}')).toBe(1);
    expect(depth("[[1],[2],[[3]]]")).toBe(3);
    // Matches the parsed value's nesting on random documents.
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const make = (d: number): [unknown, number] => {
      if (d === 0 || rnd() < 0.3) return [rnd() < 0.5 ? 's[{\\"' : 1, 0];
      const kids = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => make(d - 1));
      const deepest = 1 + Math.max(...kids.map((k) => k[1]));
      return [
        rnd() < 0.5 ? kids.map((k) => k[0]) : Object.fromEntries(kids.map((k, i) => [`k[${i}"`, k[0]])),
        deepest,
      ];
    };
    for (let i = 0; i < 200; i++) {
      const [v, d] = make(8);
      expect(depth(JSON.stringify(v))).toBe(d);
    }
  });
});
