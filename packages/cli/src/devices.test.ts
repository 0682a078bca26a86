// Backends found through the registry: `minfer devices`, --device, and -ngl against what was found.
import { join } from "node:path";
import { readGguf } from "@minfer/gguf";
import { Registry } from "@minfer/scheduler";
import { describe, expect, it } from "vitest";
import { backends, hostDevice } from "./run/backends.js";
import { chooseGpu } from "./run/gpu.js";
import { parseGpuLayers, runSettings } from "./run/options.js";
import { fixtures, minfer } from "./test-helpers.js";

const STORIES = join(fixtures, "models/stories260K.gguf");

describe("-ngl and --device", () => {
  it("-ngl takes a layer count, all or auto, and names the flag otherwise", () => {
    expect(parseGpuLayers(undefined)).toBeUndefined();
    expect(parseGpuLayers("all")).toBe("all");
    expect(parseGpuLayers("auto")).toBe("auto");
    expect(parseGpuLayers("0")).toBe(0);
    expect(parseGpuLayers("28")).toBe(28);
    for (const bad of ["x", "-1", "1.5", ""])
      expect(() => parseGpuLayers(bad)).toThrow(/-ngl must be a layer count \(0 or more\), all or auto/);
  });

  it("--device takes a device name and refuses anything else", () => {
    expect(runSettings({ device: "cuda:0" }).device).toBe("cuda:0");
    expect(runSettings({ device: "cpu" }).device).toBe("cpu");
    for (const bad of ["", "CUDA", "cuda:", "cuda:x", "../x"])
      expect(() => runSettings({ device: bad })).toThrow(
        /--device must be a device name such as cpu or cuda:0/,
      );
  });

  it("without a usable GPU: auto runs on the CPU and says why; a count or a named GPU is an error", async () => {
    const registry = await backends();
    if (registry.devices().some((d) => d.type !== "cpu")) return; // a GPU machine: nothing to check here
    const host = hostDevice(registry);
    const file = await readGguf(STORIES);
    const auto = await chooseGpu(file, {}, registry, host);
    expect(auto.runtime).toBeUndefined();
    expect(auto.note).toMatch(/^cpu only \(no usable GPU: cuda: /);
    expect((await chooseGpu(file, { gpuLayers: 0 }, registry, host)).note).toBe("cpu only (-ngl 0)");
    expect((await chooseGpu(file, { device: "cpu" }, registry, host)).note).toBe("cpu only (--device cpu)");
    await expect(chooseGpu(file, { device: "cpu", gpuLayers: 3 }, registry, host)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/^--device cpu runs every layer on the CPU; -ngl 3/),
    });
    await expect(chooseGpu(file, { gpuLayers: 3 }, registry, host)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/^-ngl 3: no usable GPU \(cuda: .*\); use -ngl 0 for the CPU only$/),
    });
    await expect(chooseGpu(file, { device: "cuda:0" }, registry, host)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(
        /^--device cuda:0: device "cuda:0" is not available: @minfer\/backend-cuda/,
      ),
    });
    const r = await minfer("run", "-m", STORIES, "-p", "Once", "-n", "2", "-ngl", "all");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/-ngl all: no usable GPU/);
  });

  it("offloads to the device --device names, through the registry", async () => {
    const { referenceBackend } = await import("@minfer/scheduler");
    const fake = referenceBackend({
      name: "fakegpu",
      type: "gpu",
      caps: { hostMemory: false },
      memoryBytes: 4 * 2 ** 30,
    });
    const real = await backends();
    const registry = await Registry.discover({ known: [], entries: [real.require("cpu"), fake] });
    const host = hostDevice(registry);
    const file = await readGguf(STORIES);
    const choice = await chooseGpu(file, { device: "fakegpu", nCtx: 64 }, registry, host);
    try {
      expect(choice.runtime?.device.name).toBe("fakegpu");
      expect(choice.layers).toBe(5);
      expect(choice.note).toMatch(/^-ngl auto: 5\/5 layers fit in 4\.00 GiB free on fakegpu \(arena /);
    } finally {
      choice.runtime?.dispose();
    }
    // Without --device, the best GPU found is taken.
    const best = await chooseGpu(file, { gpuLayers: 2 }, registry, host);
    expect(best.runtime?.device.name).toBe("fakegpu");
    expect(best.layers).toBe(2);
    best.runtime?.dispose();
  });
});

describe("minfer devices", () => {
  it("lists every backend: cpu with its SIMD level, and why the others are unusable", async () => {
    const r = await minfer("devices");
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^cpu {4}usable {8}@minfer\/backend-cpu$/);
    expect(lines[1]).toMatch(
      /^ {2}cpu: cpu, \d+\.\d GiB free of \d+\.\d GiB; simd (avx512|avx2|neon|scalar), usable levels /,
    );
    const registry = await backends();
    if (!registry.backend("cuda")) {
      const cuda = lines.find((l) => l.startsWith("cuda "));
      expect(cuda).toMatch(/^cuda {3}unusable {6}@minfer\/backend-cuda: .+/);
    }
    expect(lines.filter((l) => !l.startsWith(" ")).map((l) => l.split(" ")[0])).toEqual(["cpu", "cuda"]);
  });

  it("--json gives the same as one object; an argument is a usage error", async () => {
    const r = await minfer("devices", "--json");
    expect(r.code).toBe(0);
    const { backends: list } = JSON.parse(r.stdout) as {
      backends: {
        backend: string;
        status: string;
        reason?: string;
        devices: { name: string; properties: Record<string, unknown> }[];
      }[];
    };
    const cpu = list.find((b) => b.backend === "cpu")!;
    expect(cpu.status).toBe("loaded");
    expect(cpu.devices[0]!.name).toBe("cpu");
    expect(cpu.devices[0]!.properties.simd).toMatch(/^(avx512|avx2|neon|scalar)$/);
    for (const b of list) if (b.status !== "loaded") expect(b.reason).toBeTruthy();
    const bad = await minfer("devices", "extra");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unexpected argument "extra"/);
  });
});
