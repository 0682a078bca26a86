import { BACKEND_API_VERSION } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { backend, CpuBackendError, type CpuRuntime, cpuFeatures, cpuKernels } from "./index.js";

describe("backend entry", () => {
  it("loads with the contract's version and a positive score", () => {
    expect(backend.name).toBe("cpu");
    expect(backend.apiVersion).toBe(BACKEND_API_VERSION);
    expect(backend.score()).toBeGreaterThan(0);
    expect(backend.diagnostics().join("\n")).toMatch(/native addon .*minfer_cpu\.node/);
  });

  it("has one cpu device with host memory", () => {
    const [d, ...rest] = backend.devices();
    expect(rest).toHaveLength(0);
    expect(d!.name).toBe("cpu");
    expect(d!.type).toBe("cpu");
    expect(d!.caps.hostMemory).toBe(true);
    const m = d!.memory();
    expect(m.total).toBeGreaterThan(0);
    expect(m.free).toBeGreaterThan(0);
    expect(m.free).toBeLessThanOrEqual(m.total);
  });

  it("lists its kernels through an extension", () => {
    const kernels = (backend.getExtension!("cpu.kernels") as () => string[])();
    expect(kernels).toEqual(cpuKernels());
    expect(backend.getExtension!("nope")).toBeUndefined();
  });
});

describe("SIMD levels", () => {
  const f = cpuFeatures()!;
  const device = backend.devices()[0]!;
  const init = (o: { threads?: number; simd?: string }) => device.init(o) as Promise<CpuRuntime>;

  it("detects a level the CPU and OS allow", () => {
    expect(["scalar", "avx2", "avx512", "neon"]).toContain(f.detected);
    expect(f.usableLevels).toContain("scalar");
    expect(f.usableLevels).toContain(f.detected);
    if (f.detected === "avx2" || f.detected === "avx512") {
      expect(f.features).toEqual(expect.arrayContaining(["avx2", "fma", "f16c", "os-avx"]));
    }
    if (f.detected === "avx512") {
      expect(f.features).toEqual(
        expect.arrayContaining(["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512vnni", "os-avx512"]),
      );
    }
    expect(f.physicalCores).toBeGreaterThan(0);
    expect(f.logicalCpus).toBeGreaterThanOrEqual(f.physicalCores);
  });

  it("runs at the detected level by default, with physical cores as threads", async () => {
    const rt = await init({ simd: f.detected });
    expect(rt.simd).toBe(f.detected);
    rt.dispose();
    const rt2 = await init({ threads: 3 });
    expect(rt2.threads).toBe(3);
    rt2.dispose();
  });

  for (const level of ["scalar", "avx2", "avx512", "neon"]) {
    it(`forcing "${level}" works when usable and is refused (naming both levels) when not`, async () => {
      if (f.usableLevels.includes(level as never)) {
        const rt = await init({ simd: level, threads: 1 });
        expect(rt.simd).toBe(level);
        rt.dispose();
      } else {
        const e = await device.init({ simd: level }).catch((x: unknown) => x);
        expect(e).toBeInstanceOf(CpuBackendError);
        expect((e as CpuBackendError).code).toBe("SIMD_UNAVAILABLE");
        expect((e as Error).message).toContain(level);
        expect((e as Error).message).toContain(f.detected);
      }
    });
  }

  it("refuses an unknown level name and a bad thread count", async () => {
    await expect(device.init({ simd: "sse9" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(device.init({ threads: 0 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(device.init({ threads: 1.5 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("takes panelGemm (default true) and refuses a value that is not a boolean", async () => {
    const on = (await device.init({ threads: 1 })) as CpuRuntime;
    const off = (await device.init({ threads: 1, panelGemm: false })) as CpuRuntime;
    expect([on.panelGemm, off.panelGemm]).toEqual([true, false]);
    on.dispose();
    off.dispose();
    await expect(device.init({ panelGemm: "no" as never })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("reads panelGemm's default from MINFER_CPU_PANEL_GEMM (the option wins) and refuses other values", async () => {
    const saved = process.env.MINFER_CPU_PANEL_GEMM;
    try {
      process.env.MINFER_CPU_PANEL_GEMM = "0";
      const off = (await device.init({ threads: 1 })) as CpuRuntime;
      const on = (await device.init({ threads: 1, panelGemm: true })) as CpuRuntime;
      expect([off.panelGemm, on.panelGemm]).toEqual([false, true]);
      off.dispose();
      on.dispose();
      process.env.MINFER_CPU_PANEL_GEMM = "no";
      await expect(device.init({ threads: 1 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("MINFER_CPU_PANEL_GEMM"),
      });
    } finally {
      if (saved === undefined) delete process.env.MINFER_CPU_PANEL_GEMM;
      else process.env.MINFER_CPU_PANEL_GEMM = saved;
    }
  });
});
