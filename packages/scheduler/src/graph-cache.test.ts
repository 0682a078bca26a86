import type { Tensor } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { cacheKey, GraphCache } from "./graph-cache.js";
import { referenceBackend } from "./reference-device.js";
import { Scheduler } from "./scheduler.js";
import { bindAll } from "./test-fixtures/devices.js";
import { decodeGraph } from "./test-fixtures/graphs.js";

describe("GraphCache", () => {
  it("keys by parameters regardless of property order", () => {
    expect(cacheKey({ tokens: 1, window: 64 })).toBe(cacheKey({ window: 64, tokens: 1 }));
    expect(cacheKey({ tokens: 1 })).not.toBe(cacheKey({ tokens: 2 }));
  });

  it("answers a repeated lookup from the last one, and anything else by its key", () => {
    const built: string[] = [];
    const cache = new GraphCache<Record<string, unknown>>({
      build: (p) => {
        built.push(cacheKey(p));
        return { key: cacheKey(p) } as never;
      },
      prepare: (g) => g as never,
      maxEntries: 2,
    });
    const a = cache.get({ tokens: 1, window: 32 });
    expect(cache.get({ window: 32, tokens: 1 })).toBe(a); // the same parameters in another order
    expect(cache.get({ tokens: 1, window: 32, extra: undefined })).toBe(a); // JSON drops undefined
    const b = cache.get({ tokens: 2, window: 32 });
    expect(b).not.toBe(a);
    expect(cache.get({ tokens: 1, window: 32 })).toBe(a); // by its key again
    expect(cache.get({ tokens: 1, window: 32, nested: { x: 1 } })).not.toBe(a); // not flat: keyed
    cache.get({ tokens: 3, window: 32 }); // evicts b (two entries at most)
    cache.get({ tokens: 2, window: 32 }); // rebuilt
    expect(built).toHaveLength(5);
    cache.clear();
    cache.get({ tokens: 2, window: 32 });
    expect(built).toHaveLength(6); // cleared: built again, not answered from the last lookup
    expect(cache.stats()).toEqual({ builds: 6, hits: 3, entries: 1 });
  });

  it("a steady decode loop builds once and allocates nothing per step", async () => {
    const runtime = await referenceBackend().devices()[0]!.init();
    let allocations = 0;
    const allocate = runtime.allocate.bind(runtime);
    runtime.allocate = (bytes, label) => {
      allocations++;
      return allocate(bytes, label);
    };
    const template = decodeGraph(1, 32);
    const weights = await bindAll(template, runtime, ["weight"]);
    const states = await bindAll(template, runtime, ["state"]);
    const scheduler = new Scheduler({
      runtimes: [runtime],
      weights: weights.bindings,
      states: states.bindings,
    });
    scheduler.reserve([decodeGraph(8, 64)]);
    let builds = 0;
    const cache = new GraphCache<{ tokens: number; window: number }>({
      build: (p) => {
        builds++;
        return decodeGraph(p.tokens, p.window);
      },
      prepare: (g) => scheduler.prepare(g),
    });
    const before = allocations;
    const outputs: number[] = [];
    for (let step = 0; step < 10; step++) {
      const prepared = cache.get({ tokens: 1, window: 32 });
      const t = (name: string) => prepared.graph.tensors.find((x) => x.name === name)!;
      const inputs = new Map<Tensor, ArrayBufferView>([
        [t("x"), Float32Array.from({ length: 32 }, (_, i) => Math.cos(i + step))],
        [t("cells"), Int32Array.of(step)],
        [t("spans"), Int32Array.of(0, step + 1)],
      ]);
      const r = await prepared.executor.run(inputs);
      outputs.push(r.float32(prepared.graph.outputs[0]!)[0]!);
    }
    expect(cache.stats()).toEqual({ builds: 1, hits: 9, entries: 1 });
    expect(builds).toBe(1);
    expect(allocations - before).toBe(0);
    // Positions and cells are data: each step saw a different window.
    expect(new Set(outputs).size).toBe(10);
    // A different shape is a new build within the same reservation.
    cache.get({ tokens: 4, window: 64 });
    expect(cache.stats().builds).toBe(2);
    expect(allocations - before).toBe(0);
  });
});
