// The float64 reference's own pieces against published values: erf (Abramowitz & Stegun's table,
// to the digits given there) and the exact GELU, x·Φ(x), at x = 1 (Φ(1) from the normal table).
import { describe, expect, it } from "vitest";
import { erf, geluErf } from "./hf-reference-bert.js";

describe("hf-reference-bert", () => {
  it("erf matches tabulated values on both sides of the series / continued-fraction switch", () => {
    const table: [number, number][] = [
      [0, 0],
      [0.1, 0.1124629160182849],
      [0.5, 0.5204998778130465],
      [1, 0.8427007929497149],
      [-1.5, -0.9661051464753108],
      [2, 0.9953222650189527],
      [2.5, 0.999593047982555],
      [3, 0.9999779095030014],
      [4, 0.9999999845827421],
    ];
    for (const [x, want] of table) expect(Math.abs(erf(x) - want), `erf(${x})`).toBeLessThan(1e-14);
  });

  it("geluErf(1) = Φ(1) and is odd-symmetric around the identity (gelu(x) − gelu(−x) = x)", () => {
    expect(Math.abs(geluErf(1) - 0.8413447460685429)).toBeLessThan(1e-15);
    for (const x of [0.3, 1.7, 4.2]) expect(Math.abs(geluErf(x) - geluErf(-x) - x)).toBeLessThan(1e-14);
  });
});
