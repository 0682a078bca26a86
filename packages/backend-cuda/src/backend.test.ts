import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BACKEND_API_VERSION, DType, encodeProgram, Op, opQueryProgram } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import { readEnv } from "./config.js";
import { backend, CudaBackendError, type CudaDevice } from "./index.js";

// Runs everywhere: without a GPU (or without the addon) the entry must load, score 0 and say why.
// With a GPU (the H200 machine), buffers, copies, file uploads and a kernel are checked on it.

const devices = backend.devices() as readonly CudaDevice[];

describe("the CUDA backend entry", () => {
  it("loads; without a device it scores 0 and says why in its diagnostics", () => {
    expect(backend.apiVersion).toBe(BACKEND_API_VERSION);
    expect(backend.name).toBe("cuda");
    const d = backend.diagnostics();
    if (devices.length === 0) {
      expect(backend.score()).toBe(0);
      // No GPU here: the reason is the addon's build note, the driver or the device count.
      expect(d.join("\n")).toMatch(/not built|no CUDA|driver|cudaGetDeviceCount|unusable: the native addon/);
    } else {
      expect(backend.score()).toBeGreaterThan(3);
    }
  });
});

describe("CUDA settings from the environment", () => {
  it("reads graph capture and the kernel variants in one place", () => {
    expect(readEnv({})).toEqual({
      graphs: true,
      attnMma: true,
      attnWarps: 4,
      gemmStages: 2,
      mmqBlocks: 2,
      mmqRows: 0,
      mmqStreamk: 0,
      topkChunks: false,
      topkRadixRows: undefined,
      attnDecode: "auto",
      fuse: true,
      pdl: true,
      attnPerQuery: true,
      mmqCols: undefined,
      mvWideLoads: true,
      mvShape: {
        warps1: 1,
        rows1: 0,
        warps: 0,
        rows: 0,
        warpsLong: 0,
        warpsFew: 0,
        rowsFew: 0,
        tightWarps: 0,
        tightRows: 0,
        tightRowsFirst: 0,
        split: 1,
        warps1Few: 0,
        rows1Few: 0,
        fewRows: 0,
      },
      stepTimes: false,
      decodeRows: 1,
      ropeBlock: true,
      qkvRope: true,
      fuseRows: 64,
      attnQuantRows: 64,
      fusedCombine: true,
      invariantBatched: false,
      perQueryFlash: true,
      perQueryBlocks: 0,
      perQuerySplits: 0,
      normSliceRows: 8,
      mmqTargetBlocks: 264,
      replayOnThread: true,
    });
    expect(
      readEnv({
        MINFER_CUDA_GRAPHS: "0",
        MINFER_CUDA_ATTN: "tile",
        MINFER_CUDA_ATTN_WARPS: "2",
        MINFER_CUDA_GEMM_STAGES: "3",
        MINFER_CUDA_MMQ_BLOCKS: "3",
        MINFER_CUDA_MMQ_ROWS: "128",
        MINFER_CUDA_MMQ_STREAMK: "1",
        MINFER_CUDA_TOPK: "chunks",
        MINFER_CUDA_FUSE: "0",
        MINFER_CUDA_PDL: "0",
        MINFER_CUDA_DECODE_ATTN: "tile",
        MINFER_CUDA_ATTN_PER_QUERY: "0",
        MINFER_CUDA_MMQ: "0",
        MINFER_CUDA_MV_WIDE: "0",
        MINFER_CUDA_MV1: "2x1",
        MINFER_CUDA_MV: "2x0",
        MINFER_CUDA_MV_LONG: "4",
        MINFER_CUDA_MV_FEW: "2x3",
        MINFER_CUDA_MV_TIGHT: "4x2r",
        MINFER_CUDA_MV_SPLIT: "0",
        MINFER_CUDA_STEP_TIMES: "0",
        MINFER_CUDA_DECODE_ROWS: "64",
        MINFER_CUDA_ROPE_BLOCK: "0",
        MINFER_CUDA_QKV_ROPE: "0",
        MINFER_CUDA_FUSE_ROWS: "1",
        MINFER_CUDA_ATTN_QUANT_ROWS: "1",
        MINFER_CUDA_FUSED_COMBINE: "0",
        MINFER_CUDA_INV_BATCHED: "0",
        MINFER_CUDA_PER_QUERY_ATTN: "vec",
        MINFER_CUDA_PER_QUERY_BLOCKS: "1",
        MINFER_CUDA_PER_QUERY_SPLITS: "3",
        MINFER_CUDA_NORM_SLICE_ROWS: "0",
        MINFER_CUDA_MMQ_TARGET_BLOCKS: "1",
        MINFER_CUDA_POLL: "0",
        MINFER_CUDA_MV1_FEW: "2x2@4096",
      }),
    ).toEqual({
      graphs: false,
      attnMma: false,
      attnWarps: 2,
      gemmStages: 3,
      mmqBlocks: 3,
      mmqRows: 128,
      mmqStreamk: 1,
      topkChunks: true,
      topkRadixRows: 0,
      attnDecode: "tile",
      fuse: false,
      pdl: false,
      attnPerQuery: false,
      mmqCols: [0, 0],
      mvWideLoads: false,
      mvShape: {
        warps1: 2,
        rows1: 1,
        warps: 2,
        rows: 0,
        warpsLong: 4,
        warpsFew: 2,
        rowsFew: 3,
        tightWarps: 4,
        tightRows: 2,
        tightRowsFirst: 1,
        split: 0,
        warps1Few: 2,
        rows1Few: 2,
        fewRows: 4096,
      },
      stepTimes: false,
      decodeRows: 64,
      ropeBlock: false,
      qkvRope: false,
      fuseRows: 1,
      attnQuantRows: 1,
      fusedCombine: false,
      invariantBatched: false,
      perQueryFlash: false,
      perQueryBlocks: 1,
      perQuerySplits: 3,
      normSliceRows: 0,
      mmqTargetBlocks: 1,
      replayOnThread: false,
    });
    expect(
      readEnv({
        MINFER_CUDA_GRAPHS: "1",
        MINFER_CUDA_ATTN: "mma",
        MINFER_CUDA_ATTN_WARPS: "1",
        MINFER_CUDA_GEMM_STAGES: "2",
        MINFER_CUDA_MMQ_BLOCKS: "2",
        MINFER_CUDA_MMQ_ROWS: "64",
        MINFER_CUDA_MMQ_STREAMK: "0",
        MINFER_CUDA_TOPK: "tiles",
        MINFER_CUDA_FUSE: "1",
        MINFER_CUDA_PDL: "1",
        MINFER_CUDA_DECODE_ATTN: "flash",
        MINFER_CUDA_ATTN_PER_QUERY: "1",
        MINFER_CUDA_MMQ: "9-32",
        MINFER_CUDA_MV_WIDE: "1",
        MINFER_CUDA_MV1: "1x2",
        MINFER_CUDA_MV: "1x2",
        MINFER_CUDA_MV_LONG: "1",
        MINFER_CUDA_MV_FEW: "1x1",
        MINFER_CUDA_MV_TIGHT: "2x1r",
        MINFER_CUDA_MV_SPLIT: "1",
        MINFER_CUDA_STEP_TIMES: "1",
        MINFER_CUDA_DECODE_ROWS: "1",
        MINFER_CUDA_ROPE_BLOCK: "1",
        MINFER_CUDA_QKV_ROPE: "1",
        MINFER_CUDA_FUSE_ROWS: "17",
        MINFER_CUDA_ATTN_QUANT_ROWS: "5",
        MINFER_CUDA_FUSED_COMBINE: "1",
        MINFER_CUDA_INV_BATCHED: "1",
        MINFER_CUDA_PER_QUERY_ATTN: "flash",
        MINFER_CUDA_PER_QUERY_BLOCKS: "64",
        MINFER_CUDA_PER_QUERY_SPLITS: "16",
        MINFER_CUDA_NORM_SLICE_ROWS: "263",
        MINFER_CUDA_MMQ_TARGET_BLOCKS: "512",
        MINFER_CUDA_POLL: "1",
      }),
    ).toEqual({
      graphs: true,
      attnMma: true,
      attnWarps: 1,
      gemmStages: 2,
      mmqBlocks: 2,
      mmqRows: 64,
      mmqStreamk: 0,
      topkChunks: false,
      topkRadixRows: 0,
      attnDecode: "flash",
      fuse: true,
      pdl: true,
      attnPerQuery: true,
      mmqCols: [9, 32],
      mvWideLoads: true,
      mvShape: {
        warps1: 1,
        rows1: 2,
        warps: 1,
        rows: 2,
        warpsLong: 1,
        warpsFew: 1,
        rowsFew: 1,
        tightWarps: 2,
        tightRows: 1,
        tightRowsFirst: 1,
        split: 1,
        warps1Few: 0,
        rows1Few: 0,
        fewRows: 0,
      },
      stepTimes: true,
      decodeRows: 1,
      ropeBlock: true,
      qkvRope: true,
      fuseRows: 17,
      attnQuantRows: 5,
      fusedCombine: true,
      invariantBatched: true,
      perQueryFlash: true,
      perQueryBlocks: 64,
      perQuerySplits: 16,
      normSliceRows: 263,
      mmqTargetBlocks: 512,
      replayOnThread: true,
    });
    for (const bad of ["1-8", "8-4", "2-8193", "on", "2-"])
      expect(() => readEnv({ MINFER_CUDA_MMQ: bad })).toThrow(
        /MINFER_CUDA_MMQ must be "0" or a column range/,
      );
    for (const bad of ["3x1", "4x2", "2x3", "0x1", "2", "x2", "2x2x"])
      expect(() => readEnv({ MINFER_CUDA_MV: bad })).toThrow(/MINFER_CUDA_MV must be WxR/);
    expect(() => readEnv({ MINFER_CUDA_MV1: "4x1" })).toThrow(/MINFER_CUDA_MV1 must be WxR/);
    for (const bad of ["513", "-1", "on"])
      expect(() => readEnv({ MINFER_CUDA_MMQ_STREAMK: bad })).toThrow(
        /MINFER_CUDA_MMQ_STREAMK must be an integer in 0-512/,
      );
    expect(readEnv({ MINFER_CUDA_TOPK: "radix" })).toMatchObject({ topkRadixRows: 1, topkChunks: false });
    expect(readEnv({ MINFER_CUDA_TOPK: "auto" })).toMatchObject({
      topkRadixRows: undefined,
      topkChunks: false,
    });
    expect(() => readEnv({ MINFER_CUDA_TOPK: "sort" })).toThrow(
      /MINFER_CUDA_TOPK must be "auto" or "radix" or "tiles" or "chunks"/,
    );
    expect(() => readEnv({ MINFER_CUDA_MV_LONG: "3" })).toThrow(
      /MINFER_CUDA_MV_LONG must be "1" or "2" or "4"/,
    );
    expect(readEnv({ MINFER_CUDA_MV_LONG: "2" }).mvShape.warpsLong).toBe(2);
    expect(readEnv({ MINFER_CUDA_MMQ_ROWS: "auto" }).mmqRows).toBe(0);
    expect(() => readEnv({ MINFER_CUDA_MMQ_ROWS: "96" })).toThrow(
      /MINFER_CUDA_MMQ_ROWS must be "auto" or "64" or "128"/,
    );
    expect(() => readEnv({ MINFER_CUDA_ATTN: "flash" })).toThrow(/MINFER_CUDA_ATTN must be "mma" or "tile"/);
    expect(() => readEnv({ MINFER_CUDA_MV_WIDE: "wide" })).toThrow(/MINFER_CUDA_MV_WIDE must be "0" or "1"/);
    expect(() => readEnv({ MINFER_CUDA_MV_FEW: "4x2" })).toThrow(/MINFER_CUDA_MV_FEW must be "1x1" or/);
    expect(readEnv({ MINFER_CUDA_MV_TIGHT: "4x1c" }).mvShape).toMatchObject({
      tightWarps: 4,
      tightRows: 1,
      tightRowsFirst: 0,
    });
    expect(readEnv({ MINFER_CUDA_MV_TIGHT: "2x3s" }).mvShape).toMatchObject({
      tightWarps: 2,
      tightRows: 3,
      tightRowsFirst: 2,
    });
    expect(() => readEnv({ MINFER_CUDA_MV_TIGHT: "2x2c" })).toThrow(/MINFER_CUDA_MV_TIGHT must be "2x1r" or/);
    expect(() => readEnv({ MINFER_CUDA_MV_TIGHT: "2x1s" })).toThrow(/MINFER_CUDA_MV_TIGHT must be "2x1r" or/);
    expect(readEnv({ MINFER_CUDA_MV_SPLIT: "2" }).mvShape.split).toBe(2);
    expect(readEnv({ MINFER_CUDA_MV1_FEW: "4x1@8192" }).mvShape).toMatchObject({
      warps1Few: 4,
      rows1Few: 1,
      fewRows: 8192,
    });
    for (const bad of ["1x1@8192", "4x1", "4x3@100", "2x1@0"])
      expect(() => readEnv({ MINFER_CUDA_MV1_FEW: bad })).toThrow(/MINFER_CUDA_MV1_FEW must be WxR@ROWS/);
    expect(() => readEnv({ MINFER_CUDA_MV_SPLIT: "3" })).toThrow(
      /MINFER_CUDA_MV_SPLIT must be "0" or "1" or "2"/,
    );
    expect(() => readEnv({ MINFER_CUDA_STEP_TIMES: "yes" })).toThrow(
      /MINFER_CUDA_STEP_TIMES must be "0" or "1"/,
    );
    for (const bad of ["0", "65", "-1", "2.5", "x"])
      expect(() => readEnv({ MINFER_CUDA_DECODE_ROWS: bad })).toThrow(
        /MINFER_CUDA_DECODE_ROWS must be an integer in 1-64/,
      );
    for (const bad of ["0", "65", "x"])
      expect(() => readEnv({ MINFER_CUDA_ATTN_QUANT_ROWS: bad })).toThrow(
        /MINFER_CUDA_ATTN_QUANT_ROWS must be an integer in 1-64/,
      );
    for (const bad of ["0", "65", "x"])
      expect(() => readEnv({ MINFER_CUDA_PER_QUERY_BLOCKS: bad })).toThrow(
        /MINFER_CUDA_PER_QUERY_BLOCKS must be an integer in 1-64/,
      );
    for (const bad of ["0", "17", "x"])
      expect(() => readEnv({ MINFER_CUDA_PER_QUERY_SPLITS: bad })).toThrow(
        /MINFER_CUDA_PER_QUERY_SPLITS must be an integer in 1-16/,
      );
    for (const bad of ["264", "-1", "all"])
      expect(() => readEnv({ MINFER_CUDA_NORM_SLICE_ROWS: bad })).toThrow(
        /MINFER_CUDA_NORM_SLICE_ROWS must be an integer in 0-263/,
      );
    for (const bad of ["0", "513", "auto"])
      expect(() => readEnv({ MINFER_CUDA_MMQ_TARGET_BLOCKS: bad })).toThrow(
        /MINFER_CUDA_MMQ_TARGET_BLOCKS must be an integer in 1-512/,
      );
    expect(() => readEnv({ MINFER_CUDA_PER_QUERY_ATTN: "tile" })).toThrow(
      /MINFER_CUDA_PER_QUERY_ATTN must be "flash" or "vec"/,
    );
    expect(() => readEnv({ MINFER_CUDA_FUSE: "no" })).toThrow(/MINFER_CUDA_FUSE must be "0" or "1"/);
    expect(() => readEnv({ MINFER_CUDA_ATTN_PER_QUERY: "yes" })).toThrow(
      /MINFER_CUDA_ATTN_PER_QUERY must be "0" or "1"/,
    );
    expect(() => readEnv({ MINFER_CUDA_DECODE_ATTN: "x" })).toThrow(
      /MINFER_CUDA_DECODE_ATTN must be "auto" or "tile" or "vec" or "flash"/,
    );
    expect(() => readEnv({ MINFER_CUDA_ATTN_WARPS: "3" })).toThrow(
      /MINFER_CUDA_ATTN_WARPS must be "1" or "2" or "4"/,
    );
  });
});

type Check = (program: Uint8Array, sizes: readonly number[]) => { code: string; message: string } | null;
const checkProgram = backend.getExtension?.("cuda.checkProgram") as Check | undefined;
const kernels = (backend.getExtension?.("cuda.kernels") as (() => string[]) | undefined)?.() ?? [];

// Program validation needs the addon but no device: it runs wherever the addon was built.
describe.skipIf(!checkProgram)("CUDA program validation (no device needed)", () => {
  const f32 = (ne: [number, number, number, number]) => ({
    dtype: DType.F32,
    ne,
    nb: [4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * ne[0] * ne[1] * ne[2]] as [number, number, number, number],
  });

  it("has a kernel for every op of the IR", () => {
    const ops = Object.keys(Op);
    expect(ops.filter((o) => !kernels.includes(o))).toEqual([]);
  });

  it("refuses malformed programs and shapes a kernel lacks, naming the node", () => {
    expect(checkProgram!(new Uint8Array(8), [])).toMatchObject({ code: "BAD_PROGRAM" });
    const ok = opQueryProgram({
      op: Op.ADD,
      params: [],
      inputs: [f32([8, 2, 1, 1]), f32([8, 1, 1, 1])],
      outputs: [f32([8, 2, 1, 1])],
    });
    if ("error" in ok) throw new Error(ok.error.message);
    expect(checkProgram!(ok.program, ok.bufferSizes)).toBeNull();
    // A buffer smaller than the program needs.
    expect(checkProgram!(ok.program, [ok.bufferSizes[0]! - 1, ...ok.bufferSizes.slice(1)])).toMatchObject({
      code: "OUT_OF_RANGE",
    });
    // An ATTENTION with F32 q but an I32 k: the kernel's check refuses and names the node.
    const bad = opQueryProgram({
      op: Op.ATTENTION,
      params: [1, 0],
      inputs: [
        f32([64, 4, 1, 1]),
        { ...f32([64, 4, 8, 1]), dtype: DType.I32 },
        f32([64, 4, 8, 1]),
        f32([8, 1, 1, 1]),
      ],
      outputs: [f32([64, 4, 1, 1])],
    });
    if ("error" in bad) throw new Error(bad.error.message);
    expect(checkProgram!(bad.program, bad.bufferSizes)).toMatchObject({
      code: "UNSUPPORTED_SHAPE",
      message: expect.stringMatching(/^node 0 \(ATTENTION\): .*k/),
    });
  });

  it("accepts the fused products with addends (bias or residual) and refuses an addend that does not broadcast", () => {
    const check = (op: Op, inputs: ReturnType<typeof f32>[], outputs: ReturnType<typeof f32>[]) => {
      const q = opQueryProgram({ op, params: [], inputs, outputs });
      if ("error" in q) throw new Error(q.error.message);
      return checkProgram!(q.program, q.bufferSizes);
    };
    const w = f32([64, 32, 1, 1]);
    const x = f32([64, 3, 1, 1]);
    const out = f32([32, 3, 1, 1]);
    expect(check(Op.MUL_MAT_ADD, [w, x, f32([32, 1, 1, 1])], [out])).toBeNull();
    expect(check(Op.MUL_MAT_ADD, [w, x, f32([32, 3, 1, 1])], [out])).toBeNull();
    expect(check(Op.MUL_MAT_ADD, [w, x, f32([31, 1, 1, 1])], [out])).toMatchObject({
      code: "UNSUPPORTED_SHAPE",
    });
    // q/k/v with their biases: x, three weights, three addends.
    const wk = f32([64, 16, 1, 1]);
    const outK = f32([16, 3, 1, 1]);
    expect(
      check(
        Op.MUL_MAT_MULTI,
        [x, w, wk, wk, f32([32, 1, 1, 1]), f32([16, 1, 1, 1]), f32([16, 1, 1, 1])],
        [out, outK, outK],
      ),
    ).toBeNull();
    expect(
      check(Op.MUL_MAT_MULTI, [x, w, wk, f32([32, 1, 1, 1]), f32([17, 1, 1, 1])], [out, outK]),
    ).toMatchObject({ code: "UNSUPPORTED_SHAPE" });
  });
});

describe.skipIf(devices.length === 0)("on a CUDA device", () => {
  const dev = devices[0]!;

  it("reports memory and runs the self-test kernel", () => {
    const m = dev.memory();
    expect(m.total).toBeGreaterThan(1 << 30);
    expect(m.free).toBeGreaterThan(0);
    expect(m.free).toBeLessThanOrEqual(m.total);
    expect(dev.selfTest(100_000, 3)).toBe(true);
  });

  it("allocates zeroed buffers; writes and reads at offsets; refuses out-of-range access", async () => {
    const rt = await dev.init();
    const b = rt.allocate(1000, "t");
    expect(Array.from(await rt.read(b, 0, 1000)).every((v) => v === 0)).toBe(true);
    const data = Uint8Array.from({ length: 300 }, (_, i) => (i * 7) & 255);
    await rt.write(b, 500, data);
    expect(await rt.read(b, 500, 300)).toEqual(data);
    expect(Array.from(await rt.read(b, 499, 1))).toEqual([0]);
    await expect(rt.write(b, 900, data)).rejects.toMatchObject({ code: "OUT_OF_RANGE" });
    await expect(rt.read(b, 1001, 1)).rejects.toMatchObject({ code: "OUT_OF_RANGE" });
    await expect(rt.execute(new Uint8Array(0), [])).rejects.toMatchObject({ code: "BAD_PROGRAM" });
    b.dispose();
    await expect(rt.read(b, 0, 1)).rejects.toBeInstanceOf(CudaBackendError);
    rt.dispose();
    expect(() => rt.allocate(8, "late")).toThrow(/disposed/);
  });

  it("reads into a caller's array and into page-locked host memory (one transfer)", async () => {
    const rt = await dev.init();
    const n = 3 << 20; // staged when pageable (≥ 64 KB)
    const b = rt.allocate(n + 16, "t");
    const data = Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) & 255);
    await rt.write(b, 16, data);
    for (const into of [new Uint8Array(n + 8), rt.allocateHost!(n + 8)]) {
      into.fill(0xee);
      const got = await rt.read(b, 16, n, into.subarray(8));
      expect(got.buffer).toBe(into.buffer);
      expect(got.byteOffset).toBe(into.byteOffset + 8);
      expect(got).toEqual(data);
      expect(Array.from(into.subarray(0, 8)).every((v) => v === 0xee)).toBe(true);
    }
    expect(rt.allocateHost!(100).every((v) => v === 0)).toBe(true);
    await expect(rt.read(b, 0, 100, new Uint8Array(99))).rejects.toMatchObject({ code: "OUT_OF_RANGE" });
    expect(() => rt.allocateHost!(0)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    b.dispose();
    rt.dispose();
  });

  it("uploads a range of a file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "minfer-cuda-"));
    try {
      const bytes = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 13 + 5) & 255);
      writeFileSync(join(dir, "f.bin"), bytes);
      const rt = await dev.init();
      const b = await rt.mapFile(join(dir, "f.bin"), 1234, 60_000, "file");
      expect(await rt.read(b, 0, 60_000)).toEqual(bytes.subarray(1234, 61_234));
      await expect(rt.mapFile(join(dir, "f.bin"), 69_000, 5000, "past the end")).rejects.toMatchObject({
        code: "IO_ERROR",
      });
      b.dispose();
      rt.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A program tensor of `ne` (padded to 4 dims) packed in `buffer`, elements of `esize` bytes. */
function denseTensor(dtype: DType, buffer: number, ne: number[], esize: number) {
  const n = [...ne, 1, 1, 1].slice(0, 4) as [number, number, number, number];
  const nb = [esize, esize * n[0], esize * n[0] * n[1], esize * n[0] * n[1] * n[2]] as [
    number,
    number,
    number,
    number,
  ];
  return { dtype, buffer, offset: 0, ne: n, nb };
}

type Runs = (program: Uint8Array, sizes: readonly number[], tuning?: { qkvRope?: boolean }) => number[];
const fusedRuns = backend.getExtension?.("cuda.fusedRuns") as Runs | undefined;

describe.skipIf(!fusedRuns)("fused launches (no device needed)", () => {
  // An attention layer's cache writes, as the model graphs emit them: ROPE q, ROPE k, SET_ROWS of
  // k's rows into the k cache and of v into the v cache, all at the token's cells.
  function layer(o: { tokens?: number; kPositions?: number; vCells?: number; kOverQ?: boolean } = {}) {
    const t = o.tokens ?? 1;
    const f32 = (ne: number[], buffer: number, offset = 0) => {
      const n = [...ne, 1, 1, 1].slice(0, 4) as [number, number, number, number];
      const nb = [4, 4 * n[0], 4 * n[0] * n[1], 4 * n[0] * n[1] * n[2]] as [number, number, number, number];
      return { dtype: DType.F32, buffer, offset, ne: n, nb };
    };
    const vec = (dtype: DType, n: number, buffer: number) => ({
      dtype,
      buffer,
      offset: 0,
      ne: [n, 1, 1, 1] as [number, number, number, number],
      nb: [4, 4 * n, 4 * n, 4 * n] as [number, number, number, number],
    });
    const cache = (buffer: number) => ({
      dtype: DType.F16,
      buffer,
      offset: 0,
      ne: [16, 10, 1, 1] as [number, number, number, number],
      nb: [2, 32, 320, 320] as [number, number, number, number],
    });
    const tensors = [
      f32([8, 4, t], 0), // 0 q
      vec(DType.I32, t, 1), // 1 positions
      f32([8, 4, t], 2), // 2 q rotated
      f32([8, 2, t], 3), // 3 k
      f32([8, 2, t], o.kOverQ ? 0 : 4), // 4 k rotated (over q's memory: the allocator's reuse)
      f32([16, t], o.kOverQ ? 0 : 4), // 5 k rotated as rows
      cache(5), // 6 k cache
      vec(DType.I32, t, 6), // 7 cells
      f32([16, t], 7), // 8 v
      cache(8), // 9 v cache
      vec(DType.I32, t, 9), // 10 other positions
      vec(DType.I32, t, 10), // 11 other cells
    ];
    const rope = [0, 8, 4096, 10000, 1, 0, 1, 32, 1];
    const program = encodeProgram({
      bufferSizes: [512 * t, 4 * t, 512 * t, 256 * t, 256 * t, 320, 4 * t, 256 * t, 320, 4 * t, 4 * t],
      tensors,
      nodes: [
        { op: Op.ROPE, inputs: [0, 1], outputs: [2], params: rope },
        { op: Op.ROPE, inputs: [3, o.kPositions ?? 1], outputs: [4], params: rope },
        { op: Op.SET_ROWS, inputs: [6, 5, 7], outputs: [6], params: [] },
        { op: Op.SET_ROWS, inputs: [9, 8, o.vCells ?? 7], outputs: [9], params: [] },
      ],
    });
    return fusedRuns!(program, [
      512 * t,
      4 * t,
      512 * t,
      256 * t,
      256 * t,
      320,
      4 * t,
      256 * t,
      320,
      4 * t,
      4 * t,
    ]);
  }

  it("runs RoPE of q and k with the k and v cache stores as one launch, only when they match", () => {
    expect(layer()).toEqual([4]);
    expect(layer({ tokens: 3 })).toEqual([4]);
    expect(layer({ kPositions: 10 })).toEqual([]); // k rotated at other positions
    expect(layer({ vCells: 11 })).toEqual([]); // v stored at other cells
    // k's output in q's input memory: one token runs q before k (fused); several tokens run in
    // parallel blocks (not fused).
    expect(layer({ kOverQ: true })).toEqual([4]);
    expect(layer({ tokens: 3, kOverQ: true })).toEqual([]);
  });

  // An attention layer's norm, q/k/v product (3 weights, no biases) and cache writes: the product's
  // mat-vec rotates q and k and stores the cache rows itself.
  function qkvLayer(
    o: {
      tokens?: number;
      norm?: boolean;
      wtype?: DType;
      mode?: number;
      kOverQ?: boolean;
      qOverV?: boolean;
      kPositions?: boolean;
      qkvRope?: boolean;
    } = {},
  ) {
    const t = o.tokens ?? 1;
    const wtype = o.wtype ?? DType.Q4_0;
    const K = 256;
    const rowBytes = wtype === DType.F32 ? 4 * K : wtype === DType.Q4_0 ? (K / 32) * 18 : (K / 256) * 84;
    const dense = (dtype: DType, ne: number[], buffer: number, esize = 4) =>
      denseTensor(dtype, buffer, ne, esize);
    const weight = (rows: number, buffer: number) => ({
      dtype: wtype,
      buffer,
      offset: 0,
      ne: [K, rows, 1, 1] as [number, number, number, number],
      nb: [
        wtype === DType.F32 ? 4 : wtype === DType.Q4_0 ? 18 : 84,
        rowBytes,
        rowBytes * rows,
        rowBytes * rows,
      ] as [number, number, number, number],
    });
    const sizes = [
      4 * K * t, // 0 x
      4 * K, // 1 norm weight
      4 * K * t, // 2 h
      rowBytes * 32, // 3 wq
      rowBytes * 16, // 4 wk
      rowBytes * 16, // 5 wv
      128 * t, // 6 q product
      64 * t, // 7 k product
      64 * t, // 8 v product
      4 * t, // 9 positions
      128 * t, // 10 q rotated
      64 * t, // 11 k rotated
      320, // 12 k cache
      4 * t, // 13 cells
      320, // 14 v cache
      4 * t, // 15 other positions
    ];
    const tensors = [
      dense(DType.F32, [K, t], 0), // 0 x
      dense(DType.F32, [K], 1), // 1 norm weight
      dense(DType.F32, [K, t], 2), // 2 h
      weight(32, 3), // 3
      weight(16, 4), // 4
      weight(16, 5), // 5
      dense(DType.F32, [32, t], 6), // 6 q product
      dense(DType.F32, [16, t], 7), // 7 k product
      dense(DType.F32, [16, t], o.qOverV ? 10 : 8), // 8 v product (over q's rotated output)
      dense(DType.F32, [8, 4, t], 6), // 9 q heads
      dense(DType.F32, [8, 2, t], 7), // 10 k heads
      dense(DType.I32, [t], 9), // 11 positions
      dense(DType.F32, [8, 4, t], 10), // 12 q rotated
      dense(DType.F32, [8, 2, t], o.kOverQ ? 6 : 11), // 13 k rotated (over q's product: the allocator's reuse)
      dense(DType.F32, [16, t], o.kOverQ ? 6 : 11), // 14 k rotated as rows
      dense(DType.F16, [16, 10], 12, 2), // 15 k cache
      dense(DType.I32, [t], 13), // 16 cells
      dense(DType.F16, [16, 10], 14, 2), // 17 v cache
      dense(DType.I32, [t], 15), // 18 other positions
    ];
    const rope = [o.mode ?? 2, 8, 4096, 1000000, 1, 0, 1, 32, 1];
    const nodes = [
      ...(o.norm === false ? [] : [{ op: Op.RMS_NORM_MUL, inputs: [0, 1], outputs: [2], params: [1e-6] }]),
      { op: Op.MUL_MAT_MULTI, inputs: [o.norm === false ? 0 : 2, 3, 4, 5], outputs: [6, 7, 8], params: [] },
      { op: Op.ROPE, inputs: [9, 11], outputs: [12], params: rope },
      { op: Op.ROPE, inputs: [10, o.kPositions ? 18 : 11], outputs: [13], params: rope },
      { op: Op.SET_ROWS, inputs: [15, 14, 16], outputs: [15], params: [] },
      { op: Op.SET_ROWS, inputs: [17, 8, 16], outputs: [17], params: [] },
    ];
    return fusedRuns!(encodeProgram({ bufferSizes: sizes, tensors, nodes }), sizes, {
      qkvRope: o.qkvRope ?? true,
    });
  }

  it("has the q/k/v product's mat-vec rotate q and k and store the cache rows (qkvRope), only when it may", () => {
    expect(qkvLayer()).toEqual([6]); // the norm quantizing for it, then the product with the four nodes
    expect(qkvLayer({ qkvRope: false })).toEqual([2, 4]); // MINFER_CUDA_QKV_ROPE=0: apart
    expect(qkvLayer({ norm: false })).toEqual([5]);
    expect(qkvLayer({ mode: 0 })).toEqual([6]); // the normal mode's pairs
    expect(qkvLayer({ tokens: 4 })).toEqual([6]);
    expect(qkvLayer({ tokens: 8 })).toEqual([2, 4]); // the int8 tensor-core kernel's columns (5 on)
    // k's output over q's product: q's product is stored but for those bytes, at any token count
    // (rope_store alone runs several tokens apart then)
    expect(qkvLayer({ kOverQ: true })).toEqual([6]);
    expect(qkvLayer({ tokens: 4, kOverQ: true })).toEqual([6]);
    expect(qkvLayer({ wtype: DType.Q2_K })).toEqual([2, 4]); // a weight type without the epilogue
    expect(qkvLayer({ wtype: DType.F32 })).toEqual([4]); // not the quantized mat-vec
    expect(qkvLayer({ qOverV: true })).toEqual([2, 4]); // v's product under q's rotated output
    expect(qkvLayer({ kPositions: true })).toEqual([2]); // k rotated at other positions
  });

  // RMS_NORM_MUL (or SWIGLU, GEGLU) of a decode step's rows, then a product of quantized weights
  // reading them: the producer writes the product's quantized activations.
  function producer(o: { op?: Op; cols?: number; wtype?: DType; readsOther?: boolean } = {}) {
    const cols = o.cols ?? 1;
    const wtype = o.wtype ?? DType.Q4_0;
    const f32 = (ne: [number, number], buffer: number) => ({
      dtype: DType.F32,
      buffer,
      offset: 0,
      ne: [ne[0], ne[1], 1, 1] as [number, number, number, number],
      nb: [4, 4 * ne[0], 4 * ne[0] * ne[1], 4 * ne[0] * ne[1]] as [number, number, number, number],
    });
    const wBytes = wtype === DType.Q4_0 ? 18 * 8 * 16 : 4 * 256 * 16; // 16 rows of 256
    const weight = {
      dtype: wtype,
      buffer: 3,
      offset: 0,
      ne: [256, 16, 1, 1] as [number, number, number, number],
      nb: [wtype === DType.Q4_0 ? 18 : 4, wBytes / 16, wBytes, wBytes] as [number, number, number, number],
    };
    const sizes = [1024 * cols, 1024 * cols, 1024 * cols, wBytes, 64 * cols, 1024 * cols];
    const norm = o.op !== Op.SWIGLU && o.op !== Op.GEGLU;
    const program = encodeProgram({
      bufferSizes: sizes,
      tensors: [
        f32([256, cols], 0), // 0 x (or gate)
        norm ? f32([256, 1], 1) : f32([256, cols], 1), // 1 norm weight (or up)
        f32([256, cols], 2), // 2 the producer's output
        weight, // 3
        f32([16, cols], 4), // 4 the product
        f32([256, cols], 5), // 5 another activation
      ],
      nodes: [
        { op: norm ? Op.RMS_NORM_MUL : o.op!, inputs: [0, 1], outputs: [2], params: norm ? [1e-6] : [] },
        { op: Op.MUL_MAT, inputs: [3, o.readsOther ? 5 : 2], outputs: [4], params: [] },
      ],
    });
    return fusedRuns!(program, sizes);
  }

  it("has a norm, SWIGLU or GEGLU quantize the activations of the quantized mat-vec reading it, only then", () => {
    expect(producer()).toEqual([2]);
    expect(producer({ op: Op.SWIGLU })).toEqual([2]);
    expect(producer({ op: Op.GEGLU })).toEqual([2]);
    expect(producer({ op: Op.GEGLU, wtype: DType.F32 })).toEqual([]);
    // rows of several sequences: the product's columns (the mat-vec's, then the int8 kernel's)
    expect(producer({ op: Op.GEGLU, cols: 2 })).toEqual([2]);
    expect(producer({ cols: 4 })).toEqual([2]);
    expect(producer({ cols: 64 })).toEqual([2]);
    expect(producer({ cols: 65 })).toEqual([]); // a prompt's rows: the GEMM reads f32
    expect(producer({ wtype: DType.F32 })).toEqual([]); // an F32 weight takes f32 activations
    expect(producer({ readsOther: true })).toEqual([]); // the product reads something else
  });

  // ATTENTION of one decode query (F16 cache, spans), then the o projection over its heads'
  // outputs: the attention writes the product's Q8A activations.
  function attnThenProduct(
    o: { queries?: number; hdv?: number; wtype?: DType; mul?: Op; readsOther?: boolean } = {},
  ) {
    const nq = o.queries ?? 1;
    const hd = o.hdv ?? 128;
    const heads = 4;
    const wtype = o.wtype ?? DType.Q4_0;
    const k = hd * heads;
    const wRow = wtype === DType.Q4_0 ? (k / 32) * 18 : 4 * k;
    const t = denseTensor;
    const weight = {
      dtype: wtype,
      buffer: 5,
      offset: 0,
      ne: [k, 16, 1, 1] as [number, number, number, number],
      nb: [wtype === DType.Q4_0 ? 18 : 4, wRow, wRow * 16, wRow * 16] as [number, number, number, number],
    };
    const sizes = [
      4 * k * nq,
      2 * hd * 2 * 64,
      2 * hd * 2 * 64,
      8 * nq,
      4 * k * nq,
      wRow * 16,
      64 * nq,
      4 * k * nq,
    ];
    const program = encodeProgram({
      bufferSizes: sizes,
      tensors: [
        t(DType.F32, 0, [hd, heads, nq], 4), // 0 q
        t(DType.F16, 1, [hd, 2, 64], 2), // 1 k cache (2 kv heads, 64 cells)
        t(DType.F16, 2, [hd, 2, 64], 2), // 2 v cache
        t(DType.I32, 3, [2, nq], 4), // 3 spans
        t(DType.F32, 4, [hd, heads, nq], 4), // 4 attention output
        t(DType.F32, 4, [k, nq], 4), // 5 its heads as one column per query
        weight, // 6
        t(DType.F32, 6, [16, nq], 4), // 7 the product
        t(DType.F32, 7, [k, nq], 4), // 8 another activation
      ],
      nodes: [
        { op: Op.ATTENTION, inputs: [0, 1, 2, 3], outputs: [4], params: [1 / Math.sqrt(hd), 0] },
        { op: o.mul ?? Op.MUL_MAT, inputs: [6, o.readsOther ? 8 : 5], outputs: [7], params: [] },
      ],
    });
    return fusedRuns!(program, sizes);
  }

  it("has decode attention quantize the activations of the o projection's product, only then", () => {
    expect(attnThenProduct()).toEqual([2]);
    expect(attnThenProduct({ hdv: 64 })).toEqual([2]);
    expect(attnThenProduct({ queries: 2 })).toEqual([2]); // two queries: two columns
    expect(attnThenProduct({ queries: 16 })).toEqual([2]); // (the int8 kernel's columns)
    expect(attnThenProduct({ queries: 65 })).toEqual([]); // more columns than a producer quantizes
    expect(attnThenProduct({ hdv: 48 })).toEqual([]); // heads not whole blocks of 32
    expect(attnThenProduct({ wtype: DType.F32 })).toEqual([]); // an F32 weight takes f32 activations
    expect(attnThenProduct({ readsOther: true })).toEqual([]); // the product reads something else
  });
});
