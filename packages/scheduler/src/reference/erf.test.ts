import { describe, expect, it } from "vitest";
import { dense } from "./dense.js";
import { geluErf, geluErfValue } from "./elementwise.js";
import { erf, erfc } from "./erf.js";

/** |got − want| ≤ rel·|want|. */
const near = (got: number, want: number, rel: number) =>
  expect(Math.abs(got - want), `${got} vs ${want}`).toBeLessThanOrEqual(rel * Math.abs(want));

describe("reference erf, erfc and the exact gelu", () => {
  // Published values (Abramowitz & Stegun table 7.1 and the normal-distribution tables), to 17 digits.
  it("erf and erfc match published values, in both of their expansions", () => {
    near(erf(0.1), 0.1124629160182849, 1e-15);
    near(erf(0.5), 0.5204998778130465, 1e-15);
    near(erf(1), 0.8427007929497149, 1e-15);
    near(erf(2), 0.9953222650189527, 1e-15);
    near(erfc(0.1), 0.887537083981715, 1e-15);
    near(erfc(1.5), 0.033894853524689274, 1e-14);
    near(erfc(3), 2.209049699858544e-5, 1e-14);
    near(erfc(5), 1.5374597944280349e-12, 1e-14);
    near(erfc(10), 2.0884875837625446e-45, 1e-14);
  });

  it("is odd (erf) and reflects (erfc(−z) = 2 − erfc(z)); 0 and NaN", () => {
    expect(erf(-0.5)).toBe(-erf(0.5));
    expect(erfc(-3)).toBe(2 - erfc(3));
    expect(erf(0)).toBe(0);
    expect(erfc(0)).toBe(1);
    expect(erf(Number.NaN)).toBeNaN();
    expect(erfc(Number.NaN)).toBeNaN();
    expect(erfc(30)).toBe(0);
  });

  it("gelu_erf(x) = x·Φ(x) with Φ from the normal tables, the tail kept to full relative precision", () => {
    const phi: [number, number][] = [
      [0.5, 0.6914624612740131],
      [1, 0.8413447460685429],
      [3, 0.9986501019683699],
      [-1, 0.15865525393145705],
      [-3, 1.3498980316300946e-3],
      [-5, 2.866515718791939e-7],
      [-10, 7.619853024160525e-24],
    ];
    for (const [x, p] of phi) near(geluErfValue(x), x * p, 1e-14);
    expect(geluErfValue(0)).toBe(0);
    // The tanh approximation is off by up to ~5e-4 (at x = −2.5 it gives −0.01508, the exact −0.01552).
    const t = geluErf(dense([2, 1, 1, 1], Float64Array.of(-2.5, 2))).data;
    near(t[0]!, -2.5 * 0.006209665325776132, 1e-14);
    near(t[1]!, 2 * 0.9772498680518208, 1e-15);
  });
});
