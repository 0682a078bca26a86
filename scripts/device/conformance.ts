// The op-conformance suite without vitest, for machines that have only Node (the GPU machine):
// every case on every device of the given backends, compared with the float64 reference device,
// the same cases and comparison as packages/scheduler/src/conformance/conformance.test.ts.
// Prints a tally per device (passed / unsupported / failed, with the failures' reasons) as JSON;
// exits 1 when a case fails.
//   node scripts/device/bundle-cuda.mjs && node .device/cuda/dist/conformance.js [OUT]
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { backend as cpu } from "../../packages/backend-cpu/src/index.js";
import { backend as cuda } from "../../packages/backend-cuda/src/index.js";
import type { BackendEntry, DeviceRuntime } from "../../packages/ir/src/index.js";
import { buildCase, CONFORMANCE_CASES } from "../../packages/scheduler/src/conformance/cases.js";
import {
  type CaseOutputs,
  compareOutputs,
  runCase,
  unsupportedReason,
} from "../../packages/scheduler/src/conformance/harness.js";
import { referenceBackend } from "../../packages/scheduler/src/reference-device.js";

const backends: BackendEntry[] = process.argv.includes("--with-cpu") ? [cuda, cpu] : [cuda];
// --dump SUBSTRING: the expected and actual outputs of matching cases go to OUT/dump.json.
const di = process.argv.indexOf("--dump");
const dumpPattern = di >= 0 ? process.argv[di + 1] : undefined;
const dumps: Record<string, { device: string; expected: number[][]; actual: number[][] }[]> = {};
// --vs-cpu: also run every case on the CPU backend and list the NMSE of CUDA against the CPU per
// case, largest first (OUT/vs-cpu.json): where the two backends' arithmetic differs beyond
// rounding order, which the reference tolerances are too loose to show.
const vsCpu = process.argv.includes("--vs-cpu");
const cpuOutputs = new Map<string, CaseOutputs>();
let cpuRuntime: DeviceRuntime | undefined;
if (vsCpu) cpuRuntime = await cpu.devices()[0]!.init();
const vsCpuRows: { name: string; nmse: number }[] = [];
const oracle = await referenceBackend().devices()[0]!.init();
const expected = new Map<string, CaseOutputs>();
const report: Record<
  string,
  { passed: number; unsupported: number; failed: { name: string; why: string }[] }
> = {};
for (const b of backends) {
  for (const device of b.devices()) {
    const t = { passed: 0, unsupported: 0, failed: [] as { name: string; why: string }[] };
    report[device.name] = t;
    let runtime: DeviceRuntime;
    try {
      runtime = await device.init();
    } catch (e) {
      t.failed.push({ name: "init", why: (e as Error).message });
      continue;
    }
    for (const c of CONFORMANCE_CASES) {
      if (unsupportedReason(device, buildCase(c))) {
        t.unsupported++;
        continue;
      }
      try {
        let want = expected.get(c.name);
        if (!want) {
          want = await runCase(c, oracle);
          expected.set(c.name, want);
        }
        const got = await runCase(c, runtime);
        if (dumpPattern && c.name.includes(dumpPattern)) {
          dumps[c.name] ??= [];
          dumps[c.name]!.push({
            device: device.name,
            expected: want.map((x) => Array.from(x)),
            actual: got.map((x) => Array.from(x)),
          });
        }
        if (cpuRuntime && device.backend === "cuda") {
          let ref = cpuOutputs.get(c.name);
          if (!ref) {
            ref = await runCase(c, cpuRuntime);
            cpuOutputs.set(c.name, ref);
          }
          const nmse = Math.max(...ref.map((r, i) => compareOutputs(r, got[i]!).nmse));
          vsCpuRows.push({ name: c.name, nmse });
        }
        if (got.length !== want.length) throw new Error(`${got.length} outputs, want ${want.length}`);
        got.forEach((out, i) => {
          const { nmse, mismatch } = compareOutputs(want[i]!, out);
          if (mismatch) throw new Error(`output ${i}: ${mismatch}`);
          if (nmse > c.tolerance) throw new Error(`output ${i}: NMSE ${nmse} > ${c.tolerance}`);
        });
        t.passed++;
      } catch (e) {
        t.failed.push({ name: c.name, why: (e as Error).message });
      }
    }
    runtime.dispose();
  }
}
const text = JSON.stringify({ cases: CONFORMANCE_CASES.length, devices: report }, null, 2);
console.log(text);
if (process.argv[2] && !process.argv[2].startsWith("--")) {
  writeFileSync(join(process.argv[2], "conformance.json"), text);
  if (dumpPattern) writeFileSync(join(process.argv[2], "dump.json"), JSON.stringify(dumps));
  if (vsCpu)
    writeFileSync(
      join(process.argv[2], "vs-cpu.json"),
      JSON.stringify(
        vsCpuRows.sort((a, b) => b.nmse - a.nmse),
        null,
        1,
      ),
    );
}
process.exit(Object.values(report).every((t) => t.failed.length === 0) ? 0 : 1);
