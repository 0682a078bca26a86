import { describe, expect, it } from "vitest";
import { Allocator, packItems } from "./allocator.js";
import { assign } from "./assign.js";
import type { SchedulerError } from "./errors.js";
import { referenceBackend } from "./reference-device.js";
import { chainGraph, mlpGraph } from "./test-fixtures/graphs.js";

const device = referenceBackend().devices()[0]!;

describe("Allocator", () => {
  it("reuses freed room: a chain needs a much smaller arena than the sum of its tensors", () => {
    const a = assign(chainGraph(8), { devices: [device] });
    const plan = new Allocator(device.name).plan(a);
    expect(plan.totalBytes).toBe(9 * 4096);
    // At most three 4 KiB tensors are live at once (input of a node, its output, the final output).
    expect(plan.size).toBeLessThanOrEqual(3 * 4096);
    expect(plan.size).toBeLessThan(plan.totalBytes);
    // A node never writes into the room of its own input.
    for (const node of a.graph.nodes) {
      const inKey = plan.items.find((i) => i.tensor === node.inputs[0])!.key;
      const outKey = plan.items.find((i) => i.tensor === node.outputs[0])!.key;
      expect(plan.offsets.get(inKey)).not.toBe(plan.offsets.get(outKey));
    }
  });

  it("rounds sizes and offsets to 64 bytes", () => {
    const { offsets, size } = packItems(
      [
        { key: "a", kind: "result", tensor: undefined as never, bytes: 10, start: 1, end: 3 },
        { key: "b", kind: "result", tensor: undefined as never, bytes: 100, start: 1, end: 3 },
      ],
      64,
    );
    expect([...offsets.values()].every((o) => o % 64 === 0)).toBe(true);
    expect(size).toBe(64 + 128);
  });

  it("refuses, with the numbers, a graph larger than the reservation", () => {
    const alloc = new Allocator(device.name);
    const small = assign(chainGraph(4, 256), { devices: [device] });
    const big = assign(chainGraph(4, 4096), { devices: [device] });
    const reserved = alloc.reserve([small]);
    expect(alloc.assign(small).size).toBeLessThanOrEqual(reserved);
    let err: SchedulerError | undefined;
    try {
      alloc.assign(big);
    } catch (e) {
      err = e as SchedulerError;
    }
    expect(err?.code).toBe("ARENA_TOO_SMALL");
    expect(err?.message).toContain(`${reserved} are reserved`);
    expect(err?.message).toContain(`needs ${alloc.plan(big).size} arena bytes`);
    expect(alloc.stats().assigned).toBe(1);
  });

  it("accounts reserved, live, used and free bytes", () => {
    const alloc = new Allocator(device.name);
    expect(alloc.stats()).toMatchObject({ reserved: 0, live: 0, used: 0, free: 0 });
    const worst = assign(chainGraph(4, 4096), { devices: [device] });
    const reserved = alloc.reserve([worst, assign(mlpGraph(), { devices: [device] })]);
    alloc.assign(assign(chainGraph(4, 1024), { devices: [device] }));
    const s = alloc.stats();
    expect(s.reserved).toBe(reserved);
    expect(s.used).toBeGreaterThan(0);
    expect(s.live).toBeLessThanOrEqual(s.used);
    expect(s.free).toBe(reserved - s.used);
  });
});
