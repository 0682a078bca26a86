import { Op } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { assign } from "./assign.js";
import { SchedulerError } from "./errors.js";
import { referenceBackend } from "./reference-device.js";
import { Scheduler } from "./scheduler.js";
import { bindAll, gpuAndCpu, valuesFor } from "./test-fixtures/devices.js";
import { mlpGraph } from "./test-fixtures/graphs.js";

describe("assign", () => {
  const { gpu, cpu } = gpuAndCpu();
  const weightsOnGpu = new Map([
    ["w1", "gpu:0"],
    ["w2", "gpu:0"],
  ]);

  it("weights on a gpu lacking one op give three splits, with crossings and an explanation", () => {
    const a = assign(mlpGraph(), { devices: [gpu, cpu], weights: weightsOnGpu });
    expect(a.splits.map((s) => [s.device.name, s.nodes.map((n) => n.name)])).toEqual([
      ["gpu:0", ["up"]],
      ["cpu", ["act"]],
      ["gpu:0", ["down"]],
    ]);
    expect(a.crossings.map((c) => `${c.tensor.name} ${c.from}→${c.to}`)).toEqual([
      "up gpu:0→cpu",
      "act cpu→gpu:0",
    ]);
    const table = a.explain();
    expect(table).toMatch(/node\s+op\s+device\s+reason/);
    expect(table).toMatch(/up\s+MUL_MAT\s+gpu:0\s+weight w1 lives on gpu:0/);
    expect(table).toMatch(/act\s+SILU\s+cpu\s+only cpu supports it \(gpu:0 lack SILU\)/);
    expect(table).toContain("3 split(s)");
  });

  it("without weight locations, prefers the device of the inputs (no crossing)", () => {
    const a = assign(mlpGraph(), { devices: [gpu, cpu] });
    // up: free on both → gpu (first); act: only cpu; down: its input is on cpu → cpu.
    expect(a.splits.map((s) => s.device.name)).toEqual(["gpu:0", "cpu"]);
    expect(a.placements[2]!.reason).toMatch(/least crossing cost/);
  });

  it("a weight whose home device lacks the op runs elsewhere, and the reason names its dtype", () => {
    const noMatmul = referenceBackend({
      name: "fakegpu",
      deviceName: "gpu:0",
      type: "gpu",
      score: 10,
      caps: { hostMemory: false, launchCostUs: 5, hostToDeviceBandwidth: 20e9 },
      supports: (q) => q.op !== Op.MUL_MAT,
    }).devices()[0]!;
    const a = assign(mlpGraph(), { devices: [noMatmul, cpu], weights: weightsOnGpu });
    const up = a.placements.find((p) => p.node.name === "up")!;
    expect(up.device.name).toBe("cpu");
    expect(up.reason).toMatch(
      /gpu:0 \(home of weight w1, Q8_0\) does not support MUL_MAT \(Q8_0 \[64, 32\], F32 \[64, 3\] → F32 \[32, 3\]\)/,
    );
  });

  it("an op no device supports is an error naming the op and dtypes", () => {
    expect(() => assign(mlpGraph(), { devices: [gpu] })).toThrow(SchedulerError);
    expect(() => assign(mlpGraph(), { devices: [gpu] })).toThrow(
      /no device supports SILU \(F32 \[32, 3\] → F32 \[32, 3\]\)/,
    );
  });

  it("runs split across two devices with the same result as on one", async () => {
    const graph = mlpGraph();
    const x = graph.tensors.find((t) => t.name === "x")!;
    const xs = Float32Array.from(valuesFor(x));
    const gpuRt = await gpu.init();
    const cpuRt = await cpu.init();
    const { bindings } = await bindAll(graph, gpuRt);
    const split = new Scheduler({ runtimes: [gpuRt, cpuRt], weights: bindings });
    const p = split.prepare(graph);
    expect(
      p.plan.steps.map((s) => (s.kind === "copy" ? `copy ${s.tensor.name}` : `run ${s.device}`)),
    ).toEqual(["run gpu:0", "copy up", "run cpu", "copy act", "run gpu:0"]);
    const got = (await p.executor.run(new Map([[x, xs]]))).float32(graph.outputs[0]!);
    const single = new Scheduler({ runtimes: [cpuRt], weights: (await bindAll(graph, cpuRt)).bindings });
    const want = (await single.prepare(graph).executor.run(new Map([[x, xs]]))).float32(graph.outputs[0]!);
    expect([...got]).toEqual([...want]);
    expect(got.some((v) => v !== 0)).toBe(true);
    expect(Op.SILU).toBe(11);
  });
});
