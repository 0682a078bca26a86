import type { DeviceRuntime } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { SchedulerError } from "./errors.js";
import { referenceBackend } from "./reference-device.js";
import { Scheduler } from "./scheduler.js";
import { bindAll, gpuAndCpu, valuesFor } from "./test-fixtures/devices.js";
import { chainGraph, mlpGraph } from "./test-fixtures/graphs.js";

describe("Executor", () => {
  it("returns a per-op timing table when asked", async () => {
    const { gpu, cpu } = gpuAndCpu();
    const graph = mlpGraph();
    const gpuRt = await gpu.init();
    const cpuRt = await cpu.init();
    const { bindings } = await bindAll(graph, gpuRt);
    const s = new Scheduler({ runtimes: [gpuRt, cpuRt], weights: bindings, profile: true });
    const x = graph.tensors.find((t) => t.name === "x")!;
    const r = await s.prepare(graph).executor.run(new Map([[x, Float32Array.from(valuesFor(x))]]));
    const table = r.timing!.format();
    expect(table.split("\n")[0]).toMatch(/^op\s+node\s+device\s+µs\s+%$/);
    expect(table).toMatch(/MUL_MAT\s+up\s+gpu:0\s+\d+\.\d\s+\d+\.\d/);
    expect(table).toMatch(/SILU\s+act\s+cpu/);
    expect(table).toMatch(/COPY\s+up\s+gpu:0 → cpu/);
    expect(r.timing!.rows).toHaveLength(5);
    const pct = r.timing!.rows.reduce((acc, row) => acc + row.micros, 0);
    expect(pct).toBeCloseTo(r.timing!.totalMicros, 6);
    const quiet = await s
      .prepare(graph)
      .executor.run(new Map([[x, Float32Array.from(valuesFor(x))]]), { profile: false });
    expect(quiet.timing).toBeUndefined();
  });

  it("refuses a missing or mis-sized input by name", async () => {
    const runtime = await referenceBackend().devices()[0]!.init();
    const graph = chainGraph(2, 16);
    const p = new Scheduler({ runtimes: [runtime] }).prepare(graph);
    await expect(p.executor.run(new Map())).rejects.toThrow(/input "x" was not given/);
    await expect(p.executor.run(new Map([[graph.tensors[0]!, new Float32Array(3)]]))).rejects.toThrow(
      /needs 64 bytes, 12 were given/,
    );
    await expect(p.executor.run(new Map())).rejects.toBeInstanceOf(SchedulerError);
  });

  it("computes a chain right (scale 0.5 then silu)", async () => {
    const runtime = await referenceBackend().devices()[0]!.init();
    const graph = chainGraph(2, 4);
    const r = await new Scheduler({ runtimes: [runtime] })
      .prepare(graph)
      .executor.run(new Map([[graph.tensors[0]!, Float32Array.of(0, 2, -2, 4)]]));
    const silu = (v: number) => v / (1 + Math.exp(-v));
    expect([...r.float32(graph.outputs[0]!)]).toEqual([0, 1, -1, 2].map((v) => Math.fround(silu(v))));
  });

  // A device whose runtime takes a step's writes, program and reads as one call (as CUDA does):
  // the executor hands them over in one executeWithIo, with the same results.
  it("gives a one-device step its writes, program and reads in one executeWithIo call", async () => {
    const base = await referenceBackend().devices()[0]!.init();
    const calls: string[] = [];
    const oneCall: DeviceRuntime = {
      device: base.device,
      allocate: (bytes, label) => base.allocate(bytes, label),
      mapFile: (...a) => base.mapFile(...a),
      write: (b, o, d) => {
        calls.push("write");
        return base.write(b, o, d);
      },
      read: (b, o, n, into) => {
        calls.push("read");
        return base.read(b, o, n, into);
      },
      execute: (p, bufs, o) => {
        calls.push("execute");
        return base.execute(p, bufs, o);
      },
      async executeWithIo(program, buffers, writes, reads) {
        calls.push(`io:${writes.length}w:${reads.length}r`);
        for (const w of writes) await base.write(w.buffer, w.offset, w.data);
        await base.execute(program, buffers);
        return Promise.all(reads.map((r) => base.read(r.buffer, r.offset, r.length, r.into)));
      },
      dispose: () => base.dispose(),
    };
    const graph = chainGraph(2, 4);
    const x = new Map([[graph.tensors[0]!, Float32Array.of(0, 2, -2, 4)]]);
    const into = new Uint8Array(64);
    const out = graph.outputs[0]!;
    const r = await new Scheduler({ runtimes: [oneCall] }).prepare(graph).executor.run(x, {
      outputsInto: new Map([[out, into]]),
    });
    expect(calls).toEqual(["io:1w:1r"]);
    const plain = await new Scheduler({ runtimes: [base] }).prepare(graph).executor.run(x);
    expect([...r.float32(out)]).toEqual([...plain.float32(out)]);
    expect(r.outputs.get(out)!.buffer).toBe(into.buffer); // read into the caller's array
    // profiling measures each node: the separate calls
    calls.length = 0;
    await new Scheduler({ runtimes: [oneCall] }).prepare(graph).executor.run(x, { profile: true });
    expect(calls).toEqual(["write", "execute", "read"]);
    // a skipped output is not read (in one call or apart), and readOutput reads it afterwards
    for (const profile of [false, true]) {
      calls.length = 0;
      const ex = new Scheduler({ runtimes: [oneCall] }).prepare(graph).executor;
      const s = await ex.run(x, { skip: new Set([out]), profile });
      expect(calls).toEqual(profile ? ["write", "execute"] : ["io:1w:0r"]);
      expect(s.outputs.has(out)).toBe(false);
      expect(() => s.float32(out)).toThrow(/skipped/);
      const later = new Uint8Array(64);
      expect((await ex.readOutput(out, undefined, later)).buffer).toBe(later.buffer);
      expect([...new Float32Array(later.buffer, 0, 4)]).toEqual([...plain.float32(out)]);
      const part = await ex.readOutput(out, { offset: 8, bytes: 8 });
      expect([...new Float32Array(part.slice().buffer)]).toEqual([...plain.float32(out)].slice(2));
      await expect(ex.readOutput(out, undefined, new Uint8Array(8))).rejects.toThrow(/needs 16 bytes/);
      await expect(ex.readOutput(out, { offset: 8, bytes: 12 })).rejects.toThrow(/\[8, 20\).*has 16/);
    }
    const ex = new Scheduler({ runtimes: [base] }).prepare(graph).executor;
    await expect(ex.run(x, { skip: new Set([graph.tensors[0]!]) })).rejects.toThrow(/not an output/);
    await expect(ex.readOutput(graph.tensors[0]!)).rejects.toBeInstanceOf(SchedulerError);
  });
});
