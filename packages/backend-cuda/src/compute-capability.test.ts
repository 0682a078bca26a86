import { describe, expect, it } from "vitest";
import { MIN_COMPUTE_CAPABILITY } from "../scripts/prebuilt.mjs";
import { computeCapabilityProblem } from "./compute-capability.js";
import type { NativeDeviceInfo } from "./native.js";

const gpu = (computeCapability: string): NativeDeviceInfo => ({
  index: 0,
  name: "NVIDIA Test",
  computeCapability,
  smCount: 40,
  totalBytes: 16 * 2 ** 30,
  freeBytes: 15 * 2 ** 30,
  pciBus: "0000:01:00.0",
});

describe("computeCapabilityProblem", () => {
  it("accepts compute capability 8.0 and later, newer majors included", () => {
    expect(MIN_COMPUTE_CAPABILITY).toBe("8.0");
    for (const cc of ["8.0", "8.6", "8.9", "9.0", "10.0", "12.0"])
      expect(computeCapabilityProblem(gpu(cc))).toBeUndefined();
  });

  it("refuses an older GPU, naming it, its compute capability and the minimum", () => {
    const why = computeCapabilityProblem(gpu("7.5"));
    expect(why).toContain("cuda:0 NVIDIA Test has compute capability 7.5");
    expect(why).toContain("need 8.0 or later");
    expect(computeCapabilityProblem(gpu("6.1"))).toContain("compute capability 6.1");
  });

  it("refuses a malformed compute capability rather than guessing", () => {
    expect(computeCapabilityProblem(gpu("sm_90"))).toContain("compute capability sm_90");
  });
});
