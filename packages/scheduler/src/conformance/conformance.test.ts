import type { Device, DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REFERENCE_BACKEND } from "../reference-device.js";
import { Registry } from "../registry.js";
import { ATTENTION_Q8_0_IN_IR, buildCase, CONFORMANCE_CASES } from "./cases.js";
import { type CaseOutputs, compareOutputs, runCase, unsupportedReason } from "./harness.js";

// Every device the registry finds, except the reference (the oracle), runs every case; results
// are compared with the reference's float64 kernels. No device-specific code below.
const registry = await Registry.discover({ reference: true });
const oracle = registry.device(REFERENCE_BACKEND);
const targets: readonly Device[] = registry.devices().filter((d) => d.backend !== REFERENCE_BACKEND);
const tally = new Map<string, { passed: number; unsupported: number; failed: number }>();

let oracleRuntime: DeviceRuntime;
const expected = new Map<string, CaseOutputs>();
async function reference(name: string): Promise<CaseOutputs> {
  let r = expected.get(name);
  if (!r) {
    r = await runCase(CONFORMANCE_CASES.find((c) => c.name === name)!, oracleRuntime);
    expected.set(name, r);
  }
  return r;
}

beforeAll(async () => {
  oracleRuntime = await oracle.init();
});

afterAll(() => {
  const lines = [
    `op conformance: ${CONFORMANCE_CASES.length} cases; devices covered: ${[...tally.keys()].join(", ") || "none besides the reference"}`,
    ...[...tally].map(
      ([d, t]) => `  ${d}: ${t.passed} passed, ${t.unsupported} unsupported (skipped), ${t.failed} failed`,
    ),
    ...registry.report().map((l) => `  registry: ${l}`),
    ...(ATTENTION_Q8_0_IN_IR
      ? []
      : ["  left out: ATTENTION with Q8_0 k/v (@minfer/ir's inference does not accept Q8_0 k/v yet)"]),
  ];
  console.log(lines.join("\n"));
});

describe("op conformance", () => {
  it("finds the reference device and reports which devices it covers", () => {
    expect(oracle.backend).toBe(REFERENCE_BACKEND);
    expect(Array.isArray(targets)).toBe(true);
  });

  // The CPU backend is where every node can run (the placement falls back to it), so it must
  // take every case: a case it refuses is a failure here, not a skip.
  it("the CPU backend supports every case", () => {
    const cpu = targets.find((d) => d.backend === "cpu");
    expect(cpu, "the CPU backend was not discovered (is its addon built?)").toBeDefined();
    const refused = CONFORMANCE_CASES.flatMap((c) => {
      const why = unsupportedReason(cpu!, buildCase(c));
      return why ? [`${c.name}: ${why}`] : [];
    });
    expect(refused).toEqual([]);
  });

  // Each device runs in every configuration it asks to be covered in (e.g. each SIMD level).
  const runs = targets.flatMap((device) =>
    (device.variants?.() ?? [{ label: "default", options: {} }]).map((v) => ({
      device,
      variant: v,
      key: `${device.name} ${v.label}`,
    })),
  );
  for (const { device, variant, key } of runs) {
    describe(key, () => {
      let runtime: DeviceRuntime;
      beforeAll(async () => {
        runtime = await device.init(variant.options);
        tally.set(key, { passed: 0, unsupported: 0, failed: 0 });
      });
      afterAll(() => runtime?.dispose());

      it.each(CONFORMANCE_CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
        const t = tally.get(key)!;
        if (unsupportedReason(device, buildCase(c))) {
          t.unsupported++;
          return;
        }
        const want = await reference(c.name);
        const got = await runCase(c, runtime);
        try {
          expect(got.length).toBe(want.length);
          got.forEach((out, i) => {
            const { nmse, mismatch } = compareOutputs(want[i]!, out);
            expect(mismatch, `output ${i}`).toBeUndefined();
            expect(nmse, `output ${i}: NMSE ${nmse} > ${c.tolerance}`).toBeLessThanOrEqual(c.tolerance);
          });
          t.passed++;
        } catch (e) {
          t.failed++;
          throw e;
        }
      });
    });
  }
});
