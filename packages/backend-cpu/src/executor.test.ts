import {
  DType,
  encodeProgram,
  OP_SPECS,
  Op,
  type OpQuery,
  PROGRAM_FLAG_BATCH_INVARIANT,
  type Shape,
} from "@minfer/ir";
import { afterAll, describe, expect, it } from "vitest";
import { backend, CpuBackendError, type CpuRuntime, cpuKernels } from "./index.js";
import { addProgram, layout } from "./test-helpers.js";

const device = backend.devices()[0]!;
const rt = (await device.init({ threads: 2 })) as CpuRuntime;
afterAll(() => rt.dispose());

it("has a kernel for every op of the IR", () => {
  expect(cpuKernels().sort()).toEqual(OP_SPECS.map((s) => s.name).sort());
});

function buffers(n: number, bytes: number) {
  return Array.from({ length: n }, (_, i) => rt.allocate(bytes, `b${i}`));
}

async function refused(program: Uint8Array, bufs = buffers(3, 64)): Promise<CpuBackendError> {
  const e = await rt.execute(program, bufs).then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(CpuBackendError);
  return e as CpuBackendError;
}

function patch(program: Uint8Array, at: number, write: (dv: DataView) => void): Uint8Array {
  const copy = program.slice();
  write(new DataView(copy.buffer, at));
  return copy;
}

describe("executor validation", () => {
  const good = encodeProgram(addProgram(16));

  it("runs an empty program", async () => {
    const empty = encodeProgram({ bufferSizes: [], tensors: [], nodes: [] });
    expect(await rt.execute(empty, [])).toEqual({});
    expect(await rt.execute(empty, [], { profile: true })).toEqual({ nodeMicros: new Float64Array(0) });
  });

  it("refuses a wrong magic, version, record size or length", async () => {
    let e = await refused(patch(good, 0, (dv) => dv.setUint32(0, 0x12345678, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    expect(e.message).toMatch(/magic/);
    e = await refused(patch(good, 4, (dv) => dv.setUint32(0, 99, true)));
    expect(e.message).toMatch(/version 99/);
    e = await refused(patch(good, 20, (dv) => dv.setUint32(0, 81, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    e = await refused(good.subarray(0, good.length - 1));
    expect(e.code).toBe("BAD_PROGRAM");
    e = await refused(patch(good, 16, (dv) => dv.setUint32(0, 1_000_000, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    e = await refused(new Uint8Array(5));
    expect(e.code).toBe("BAD_PROGRAM");
  });

  it("runs a batch-invariant program (header flag 1) and refuses flag bits it does not know", async () => {
    const flagged = encodeProgram({ ...addProgram(16), flags: PROGRAM_FLAG_BATCH_INVARIANT });
    const bufs = buffers(3, 64);
    expect(await rt.execute(flagged, bufs)).toEqual({});
    const e = await refused(patch(good, 28, (dv) => dv.setUint32(0, 6, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    expect(e.message).toMatch(/program flags 6/);
  });

  it("refuses a buffer count that differs from the program's slots", async () => {
    const e = await refused(good, buffers(2, 64));
    expect(e.code).toBe("BAD_PROGRAM");
    expect(e.message).toMatch(/3 buffer slots but 2/);
  });

  it("refuses a tensor past its actual buffer (OUT_OF_RANGE)", async () => {
    // The program is consistent; the buffer passed for slot 1 is smaller than it says.
    const bufs = [rt.allocate(64, "a"), rt.allocate(32, "b"), rt.allocate(64, "c")];
    let e = await refused(good, bufs);
    expect(e.code).toBe("OUT_OF_RANGE");
    // A tensor whose offset pushes it past the end of its buffer.
    const t1 = layout.tensor(3, 1);
    e = await refused(patch(good, t1 + 8, (dv) => dv.setBigInt64(0, 8n, true)));
    expect(e.code).toBe("OUT_OF_RANGE");
    expect(e.message).toMatch(/tensor 1: bytes 8\.\.72 are outside buffer slot 1 \(64 bytes\)/);
  });

  it("refuses a bad buffer slot, negative offset, negative ne or stride, unknown dtype", async () => {
    const t0 = layout.tensor(3, 0);
    let e = await refused(patch(good, t0 + 4, (dv) => dv.setInt32(0, 7, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    expect(e.message).toMatch(/tensor 0: buffer slot 7/);
    e = await refused(patch(good, t0 + 4, (dv) => dv.setInt32(0, -1, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    e = await refused(patch(good, t0 + 8, (dv) => dv.setBigInt64(0, -4n, true)));
    expect(e.message).toMatch(/negative byte offset/);
    e = await refused(patch(good, t0 + 16, (dv) => dv.setBigInt64(0, -16n, true)));
    expect(e.message).toMatch(/negative ne\[0\]/);
    e = await refused(patch(good, t0 + 56, (dv) => dv.setBigInt64(0, -64n, true)));
    expect(e.message).toMatch(/negative nb\[1\]/);
    e = await refused(patch(good, t0, (dv) => dv.setInt32(0, 77, true)));
    expect(e.message).toMatch(/unknown dtype id 77/);
    // A stride so large that the span overflows 64 bits.
    e = await refused(
      patch(good, t0 + 24, (dv) => {
        dv.setBigInt64(0, 1n << 40n, true); // ne[1]
        dv.setBigInt64(32, 1n << 40n, true); // nb[1]
      }),
    );
    expect(e.code).toBe("BAD_PROGRAM");
  });

  it("refuses an unknown op (UNSUPPORTED_OP)", async () => {
    const n0 = layout.node(3, 3, 0);
    const e = await refused(patch(good, n0, (dv) => dv.setInt32(0, 250, true)));
    expect(e.code).toBe("UNSUPPORTED_OP");
    expect(e.message).toMatch(/node 0: op code 250/);
  });

  it("refuses a node with too many inputs, outputs or parameters, or a bad tensor index", async () => {
    const n0 = layout.node(3, 3, 0);
    let e = await refused(patch(good, n0 + 4, (dv) => dv.setInt32(0, 3, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    expect(e.message).toMatch(/node 0 \(ADD\): 3 inputs; the op takes 2\.\.2/);
    e = await refused(patch(good, n0 + 4, (dv) => dv.setInt32(0, 9, true)));
    expect(e.code).toBe("BAD_PROGRAM");
    e = await refused(patch(good, n0 + 8, (dv) => dv.setInt32(0, 2, true)));
    expect(e.message).toMatch(/node 0 \(ADD\): 2 outputs/);
    e = await refused(patch(good, n0 + 12, (dv) => dv.setInt32(0, 1, true)));
    expect(e.message).toMatch(/node 0 \(ADD\): 1 parameters/);
    e = await refused(patch(good, n0 + 16, (dv) => dv.setInt32(0, 3, true)));
    expect(e.message).toMatch(/node 0 \(ADD\): input 0 is tensor 3 of 3/);
    e = await refused(patch(good, n0 + 16 + 32, (dv) => dv.setInt32(0, -1, true)));
    expect(e.message).toMatch(/output 0 is tensor -1/);
  });

  it("refuses a known op without a kernel (NO_KERNEL), naming the node and op", async () => {
    const missing = ["GET_ROWS", "MUL_MAT", "MUL_MAT_ID", "MUL_MAT_MULTI"].find(
      (n) => !cpuKernels().includes(n),
    );
    if (!missing) return; // every op has a kernel now
    const n0 = layout.node(3, 3, 0);
    const e = await refused(patch(good, n0, (dv) => dv.setInt32(0, Op[missing as keyof typeof Op], true)));
    expect(["NO_KERNEL", "BAD_PROGRAM"]).toContain(e.code);
    expect(e.message).toContain(`node 0 (${missing})`);
  });

  it("refuses program outputs in a read-only (mapped) buffer", async () => {
    const { storiesPath } = await import("./test-helpers.js");
    const m = await rt.mapFile(storiesPath(), 0, 64, "ro");
    const e = await refused(good, [rt.allocate(64, "a"), rt.allocate(64, "b"), m]);
    expect(e.code).toBe("BAD_PROGRAM");
    expect(e.message).toMatch(/read-only/);
  });

  it("refuses a disposed buffer and refuses disposing a buffer (or the runtime) during an execute", async () => {
    const bufs = buffers(3, 64);
    bufs[1]!.dispose();
    expect((await refused(good, bufs)).code).toBe("DISPOSED");
    const n = 1 << 20;
    const big = buffers(3, 4 * n);
    const running = rt.execute(encodeProgram(addProgram(n, 20)), big);
    expect(() => big[0]!.dispose()).toThrow(expect.objectContaining({ code: "BUSY" }));
    expect(() => rt.dispose()).toThrow(expect.objectContaining({ code: "BUSY" }));
    await expect(rt.write(big[2]!, 0, new Uint8Array(4))).rejects.toMatchObject({ code: "BUSY" });
    await running;
    big[0]!.dispose();
    expect(big[0]!.disposed).toBe(true);
  });
});

describe("execute", () => {
  it("adds two vectors, with per-node timing when asked", async () => {
    const n = 1000;
    const [a, b, c] = buffers(3, 4 * n);
    const x = Float32Array.from({ length: n }, (_, i) => i);
    const y = Float32Array.from({ length: n }, (_, i) => 0.5 * i);
    await rt.write(a!, 0, x);
    await rt.write(b!, 0, y);
    const r = await rt.execute(encodeProgram(addProgram(n, 2)), [a!, b!, c!], { profile: true });
    expect(r.nodeMicros).toHaveLength(2);
    const out = new Float32Array((await rt.read(c!, 0, 4 * n)).buffer);
    expect(out[999]).toBe(999 * 1.5);
    expect(Array.from(out.slice(0, 3))).toEqual([0, 1.5, 3]);
  });

  it("keeps the event loop free while a large matmul runs", async () => {
    // Q8_0 weights [4096, 4096] × 2048 activation columns: about 69 GFLOP, well over 50 ms here
    // even with the AVX-512 panel GEMM (1024 columns measured 47.5 ms once on 2 cores).
    const [k, m, n] = [4096, 4096, 2048];
    const wBytes = (k / 32) * 34 * m;
    const bufs = [rt.allocate(wBytes, "w"), rt.allocate(4 * k * n, "x"), rt.allocate(4 * m * n, "y")];
    const program = encodeProgram({
      bufferSizes: bufs.map((b) => b.size),
      tensors: [
        {
          dtype: DType.Q8_0,
          buffer: 0,
          offset: 0,
          ne: [k, m, 1, 1],
          nb: [34, (k / 32) * 34, wBytes, wBytes],
        },
        { dtype: DType.F32, buffer: 1, offset: 0, ne: [k, n, 1, 1], nb: [4, 4 * k, 4 * k * n, 4 * k * n] },
        { dtype: DType.F32, buffer: 2, offset: 0, ne: [m, n, 1, 1], nb: [4, 4 * m, 4 * m * n, 4 * m * n] },
      ],
      nodes: [{ op: Op.MUL_MAT, inputs: [0, 1], outputs: [2], params: [] }],
    });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const start = performance.now();
    await rt.execute(program, bufs);
    const ms = performance.now() - start;
    clearInterval(timer);
    expect(ms).toBeGreaterThan(50);
    // Timers kept firing throughout: the JS thread was never blocked by the computation.
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(ms / 20));
    for (const b of bufs) b.dispose();
  });

  it("keeps the event loop free while a long chain of adds runs", async () => {
    const n = 1 << 22;
    const bufs = buffers(3, 4 * n);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const start = performance.now();
    await rt.execute(encodeProgram(addProgram(n, 60)), bufs);
    const ms = performance.now() - start;
    clearInterval(timer);
    // At least a tick for every ~20 ms the execute took: the JS thread was never blocked.
    expect(ticks).toBeGreaterThanOrEqual(Math.max(1, Math.floor(ms / 20)));
    for (const b of bufs) b.dispose();
  });
});

describe("supportsOp", () => {
  const vec = (n: number) => {
    const ne: Shape = [n, 1, 1, 1];
    return { dtype: DType.F32, ne, nb: [4, 4 * n, 4 * n, 4 * n] as Shape };
  };

  it("answers from the native checks and caches", () => {
    const q: OpQuery = { op: Op.ADD, params: [], inputs: [vec(8), vec(8)], outputs: [vec(8)] };
    expect(device.supportsOp(q)).toBe(true);
    expect(device.supportsOp(q)).toBe(true);
    const bad: OpQuery = { op: Op.ADD, params: [], inputs: [vec(8)], outputs: [vec(8)] };
    expect(device.supportsOp(bad)).toBe(false);
    const unknown = { op: 99 as Op, params: [], inputs: [vec(8)], outputs: [vec(8)] } as OpQuery;
    expect(device.supportsOp(unknown)).toBe(false);
  });
});
