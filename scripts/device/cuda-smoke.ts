// A smoke run of @minfer/backend-cuda on a GPU machine: device discovery, memory, the self-test
// kernel, buffers (zeroed, offsets, bounds), a file upload, the refusal of a malformed program,
// a quantizing copy compared byte for byte with the CPU backend, and a greedy decode of
// stories260K with fused launches against the same without (MINFER_CUDA_FUSE=0): identical logits. Prints a JSON report; exits 1 when a check fails.
//   node scripts/device/bundle-cuda.mjs          (here: bundles this file and the addon into .device/cuda)
//   node .device/cuda/dist/cuda-smoke.js [OUT [MODEL.gguf …]]   (there: writes OUT/cuda-smoke.json too)
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { backend as cpuBackend } from "../../packages/backend-cpu/src/index.js";
import { backend, type CudaDevice, type CudaRuntime } from "../../packages/backend-cuda/src/index.js";
import { Context, type Logits, Model } from "../../packages/engine/src/index.js";
import { type DeviceRuntime, DType, Op, opQueryProgram, type Shape } from "../../packages/ir/src/index.js";

const report: { diagnostics: string[]; checks: { name: string; ok: boolean; detail?: string }[] } = {
  diagnostics: backend.diagnostics() as string[],
  checks: [],
};
const check = async (name: string, f: () => Promise<boolean | string> | boolean | string) => {
  try {
    const r = await f();
    report.checks.push({
      name,
      ok: r === true || typeof r === "string",
      ...(typeof r === "string" ? { detail: r } : {}),
    });
  } catch (e) {
    report.checks.push({ name, ok: false, detail: `${(e as Error).name}: ${(e as Error).message}` });
  }
};

const devices = backend.devices() as readonly CudaDevice[];
await check("a device is found", () => (devices.length > 0 ? `${devices.length} device(s)` : false));
const dev = devices[0];
if (dev) {
  await check("memory", () => {
    const m = dev.memory();
    return m.total > 1 << 30 && m.free > 0 && m.free <= m.total ? `${m.free} free of ${m.total}` : false;
  });
  await check("self-test kernel (sm_90 code runs)", () => dev.selfTest(1 << 20, 11));
  const rt = await dev.init();
  await check("buffers: zeroed, offsets, bounds", async () => {
    const b = rt.allocate(1 << 20, "t");
    const zero = (await rt.read(b, 0, 1 << 20)).every((v) => v === 0);
    const data = Uint8Array.from({ length: 4096 }, (_, i) => (i * 31) & 255);
    await rt.write(b, 12345, data);
    const back = await rt.read(b, 12345, 4096);
    const same = back.every((v, i) => v === data[i]);
    let refused = false;
    try {
      await rt.read(b, (1 << 20) - 10, 11);
    } catch (e) {
      refused = (e as { code?: string }).code === "OUT_OF_RANGE";
    }
    b.dispose();
    return zero && same && refused;
  });
  // Copies of 64 KB and more go through the pinned staging buffers (native/cuda/device.cu) in
  // chunks of 8 MB: sizes around the thresholds, odd offsets, several chunks each way.
  await check("staged copies: sizes around 64 KB and 8 MB, odd offsets", async () => {
    const size = (24 << 20) + 4099;
    const b = rt.allocate(size, "s");
    const sizes = [(64 << 10) - 1, 64 << 10, (8 << 20) + 1, (16 << 20) + 5, size - 7];
    const bad: string[] = [];
    for (const [k, n] of sizes.entries()) {
      const off = size - n - (k % 2 === 0 ? 3 : 0);
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 131 + k * 17 + (i >>> 11)) & 255);
      await rt.write(b, off, data);
      const back = await rt.read(b, off, n);
      if (back.length !== n || !back.every((v, i) => v === data[i])) bad.push(`${n} at ${off}`);
    }
    b.dispose();
    if (bad.length > 0) throw new Error(`read back differs: ${bad.join(", ")}`);
    return `${sizes.length} sizes round-trip`;
  });
  await check(
    "reads into a caller's array: pageable (staged) and page-locked (one transfer), odd offsets",
    async () => {
      const size = (20 << 20) + 4099;
      const b = rt.allocate(size, "into");
      const data = Uint8Array.from({ length: size }, (_, i) => (i * 29 + (i >>> 9)) & 255);
      await rt.write(b, 0, data);
      const bad: string[] = [];
      const hosts = {
        pageable: new Uint8Array(size + 64),
        pinned: (rt as CudaRuntime).allocateHost(size + 64),
      };
      for (const [kind, into] of Object.entries(hosts))
        for (const [off, n, at] of [
          [0, 1000, 3],
          [5, (64 << 10) + 1, 0],
          [7, (8 << 20) + 3, 33],
          [1, size - 1, 17],
        ] as const) {
          into.fill(0xa5);
          const got = await rt.read(b, off, n, into.subarray(at));
          const same =
            got.buffer === into.buffer && got.byteOffset === into.byteOffset + at && got.length === n;
          if (
            !same ||
            !got.every((v, i) => v === data[off + i]) ||
            (at > 0 && into[at - 1] !== 0xa5) ||
            into[at + n] !== 0xa5
          )
            bad.push(`${kind} ${n} at ${off}`);
        }
      b.dispose();
      if (bad.length > 0) throw new Error(`read into differs: ${bad.join(", ")}`);
      return "4 sizes into pageable and page-locked memory";
    },
  );
  await check("file upload", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cuda-smoke-"));
    const bytes = Uint8Array.from({ length: 3 << 20 }, (_, i) => (i * 7 + 1) & 255);
    writeFileSync(join(dir, "f.bin"), bytes);
    const b = await rt.mapFile(join(dir, "f.bin"), 100, bytes.length - 200, "f");
    const back = await rt.read(b, 0, bytes.length - 200);
    b.dispose();
    return back.every((v, i) => v === bytes[i + 100]);
  });
  await check("a malformed program is refused with BAD_PROGRAM", async () => {
    try {
      await rt.execute(new Uint8Array(0), []);
      return false;
    } catch (e) {
      return (e as { code?: string }).code === "BAD_PROGRAM";
    }
  });
  // CPY F32→Q8_0 as a one-node program with its own input and output buffers (no arena, so no
  // aliasing of the output with the dying input): the bytes must equal the CPU backend's.
  await check("CPY F32→Q8_0 in separate buffers: the CPU's bytes", async () => {
    const n = 256;
    const f32 = { dtype: DType.F32, ne: [n, 1, 1, 1] as Shape, nb: [4, 4 * n, 4 * n, 4 * n] as Shape };
    const q8 = {
      dtype: DType.Q8_0,
      ne: [n, 1, 1, 1] as Shape,
      nb: [34, 34 * (n / 32), 34 * (n / 32), 34 * (n / 32)] as Shape,
    };
    const q = opQueryProgram({ op: Op.CPY, params: [], inputs: [f32], outputs: [q8] });
    if ("error" in q) throw new Error(q.error.message);
    const x = new Float32Array(n).map((_, i) => Math.sin(i * 0.37) * (1 + (i % 7)));
    const run = async (r: DeviceRuntime) => {
      const a = r.allocate(q.bufferSizes[0]!, "x");
      const o = r.allocate(q.bufferSizes[1]!, "o");
      await r.write(a, 0, x);
      await r.execute(q.program, [a, o]);
      const bytes = await r.read(o, 0, q.bufferSizes[1]!);
      a.dispose();
      o.dispose();
      return bytes;
    };
    const cpuRt = await cpuBackend.devices()[0]!.init({ threads: 1 });
    const want = await run(cpuRt);
    cpuRt.dispose();
    const got = await run(rt);
    const hex = (b: Uint8Array) =>
      Array.from(b.subarray(0, 8), (v) => v.toString(16).padStart(2, "0")).join(" ");
    const same = want.every((v, i) => v === got[i]);
    if (!same) throw new Error(`differs: cuda ${hex(got)} … cpu ${hex(want)} …`);
    return true;
  });
  // executeWithIo's replay on the JavaScript thread (launchReplay / pollReplay): a one-node
  // GET_ROWS whose indices are uploaded with it; the third run replays on this thread. A bad
  // index there fails that run (OUT_OF_RANGE, naming the node) and leaves the runtime usable.
  await check(
    "replay on the JavaScript thread: uploads, graph, reads; an index error; then again",
    async () => {
      const cuda = rt as CudaRuntime;
      const rows = 64;
      const width = 32;
      const f32 = (n: number, m: number) => ({
        dtype: DType.F32,
        ne: [n, m, 1, 1] as Shape,
        nb: [4, 4 * n, 4 * n * m, 4 * n * m] as Shape,
      });
      const i32 = { dtype: DType.I32, ne: [3, 1, 1, 1] as Shape, nb: [4, 12, 12, 12] as Shape };
      const q = opQueryProgram({
        op: Op.GET_ROWS,
        params: [],
        inputs: [f32(width, rows), i32],
        outputs: [f32(width, 3)],
      });
      if ("error" in q) throw new Error(q.error.message);
      const bufs = q.bufferSizes.map((n, i) => cuda.allocate(n, `g${i}`));
      const table = Float32Array.from({ length: width * rows }, (_, i) => i * 0.5);
      await cuda.write(bufs[0]!, 0, table);
      const into = cuda.allocateHost(q.bufferSizes[2]!);
      const run = (idx: number[]) =>
        cuda.executeWithIo(
          q.program,
          bufs,
          [{ buffer: bufs[1]!, offset: 0, data: Int32Array.from(idx) }],
          [{ buffer: bufs[2]!, offset: 0, length: q.bufferSizes[2]!, into }],
        );
      const expectRows = async (idx: number[]) => {
        const out = new Float32Array((await run(idx))[0]!.slice().buffer);
        for (let r = 0; r < 3; r++)
          for (let c = 0; c < width; c++)
            if (out[r * width + c] !== table[idx[r]! * width + c])
              throw new Error(`rows ${idx}: element ${r},${c} differs`);
      };
      const before = cuda.graphStats().threadReplays;
      await expectRows([1, 2, 3]); // first run, then capture
      await expectRows([60, 0, 7]);
      await expectRows([5, 63, 5]); // replayed on this thread
      const onThread = cuda.graphStats().threadReplays - before;
      if (onThread < 1) throw new Error(`no run replayed on the JavaScript thread (${onThread})`);
      let code = "";
      try {
        await run([2, 64, 1]);
      } catch (e) {
        code = `${(e as { code?: string }).code}: ${(e as Error).message}`;
      }
      if (!/OUT_OF_RANGE/.test(code) || !/node 0 \(GET_ROWS\)/.test(code))
        throw new Error(`bad index: ${code || "no error"}`);
      await expectRows([9, 8, 7]);
      for (const b of bufs) b.dispose();
      return `${cuda.graphStats().threadReplays - before} runs replayed on this thread; a bad index: ${code}`;
    },
  );
  const argmax = (row: Float32Array) => {
    let best = 0;
    for (let t = 1; t < row.length; t++) if (row[t]! > row[best]!) best = t;
    return best;
  };
  // `path` with every layer on a CUDA runtime started under `env` (NAME, VALUE; the variable is
  // restored after), a context on it made with `options`, and `steps`' logits rows; the runtime's
  // stats at the end, everything disposed.
  const offloaded = async (
    path: string,
    env: Readonly<Record<string, string>>,
    options: ConstructorParameters<typeof Context>[1],
    steps: (ctx: Context, model: Model) => Promise<Float32Array[]>,
  ) => {
    const cpuRt = await cpuBackend.devices()[0]!.init({ threads: 1 });
    const before = Object.keys(env).map((k) => [k, process.env[k]] as const);
    Object.assign(process.env, env);
    const gpu = (await dev.init()) as CudaRuntime;
    for (const [k, v] of before) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    const probe = await Model.load(path, { runtime: cpuRt });
    const layers = probe.hparams.nLayer;
    probe.dispose();
    const model = await Model.load(path, { runtime: cpuRt, offload: { runtime: gpu, layers } });
    const ctx = new Context(model, options);
    try {
      const rows = await steps(ctx, model);
      return { rows, stats: gpu.graphStats() };
    } finally {
      ctx.dispose();
      model.dispose();
      gpu.dispose();
      cpuRt.dispose();
    }
  };
  // 24 greedy steps of one sequence: the logits of each step.
  const greedy = (path: string, env: Readonly<Record<string, string>>, reuseLogits: boolean) =>
    offloaded(path, env, { nCtx: 128, reuseLogits }, async (ctx, model) => {
      const step = async (tokens: ArrayLike<number>) =>
        (await ctx.decode({ tokens, logits: "last" })).last().slice();
      const rows: Float32Array[] = [];
      let logits = await step(model.tokenizer.encode("Once upon a time", { addSpecial: true }));
      for (let i = 0; i < 24; i++) {
        rows.push(logits);
        logits = await step([argmax(logits)]);
      }
      return rows;
    });
  // 16 greedy steps of 4 sequences decoding together, each in its own region: the logits rows of
  // each step.
  const greedyBatch = (path: string, env: Readonly<Record<string, string>>) =>
    offloaded(
      path,
      env,
      { nCtx: 256, nSeqMax: 4, kvUnified: false, reuseLogits: true },
      async (ctx, model) => {
        const prompts = ["Once upon a time", "The cat", "A little girl named Lily", "One day"];
        const seqs = prompts.map((_, q) => q);
        const next: number[] = [];
        for (const q of seqs) {
          const prompt = model.tokenizer.encode(prompts[q]!, { addSpecial: true });
          next.push(argmax((await ctx.decode({ tokens: prompt, seq: q, logits: "last" })).last()));
        }
        const rows: Float32Array[] = [];
        for (let i = 0; i < 16; i++) {
          const l = await ctx.decode({ tokens: next, seq: seqs, logits: "all" });
          for (let r = 0; r < seqs.length; r++) {
            const row = l.get(l.indices[r]!).slice();
            rows.push(row);
            next[r] = argmax(row);
          }
        }
        return rows;
      },
    );
  const envText = (env: Readonly<Record<string, string>>) =>
    Object.entries(env)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
  // Throws naming the first step and logit whose bits differ.
  const sameBits = (a: Float32Array[], b: Float32Array[]) => {
    for (let i = 0; i < a.length; i++) {
      const x = new Uint32Array(a[i]!.buffer);
      const y = new Uint32Array(b[i]!.buffer);
      const at = x.findIndex((v, k) => v !== y[k]);
      if (at >= 0) throw new Error(`step ${i}: logit ${at} differs (${a[i]![at]} vs ${b[i]![at]})`);
    }
  };
  const stories = new URL("../fixtures/stories260K.gguf", import.meta.url).pathname;
  const models = [stories, ...process.argv.slice(3)];
  // Greedy decoding with executeWithIo's replay on the JavaScript thread (reused, page-locked
  // logits) against MINFER_CUDA_POLL=0 (a worker thread waits for each step): identical logits.
  for (const path of [stories, ...process.argv.slice(3, 4)]) {
    await check(
      `replay on the JavaScript thread: logits bit-identical to MINFER_CUDA_POLL=0 (${basename(path)})`,
      async () => {
        const polled = await greedy(path, { MINFER_CUDA_POLL: "1" }, true);
        const waited = await greedy(path, { MINFER_CUDA_POLL: "0" }, true);
        if (polled.stats.threadReplays === 0)
          throw new Error("no step was replayed on the JavaScript thread");
        if (waited.stats.threadReplays !== 0)
          throw new Error(
            `MINFER_CUDA_POLL=0 still replayed ${waited.stats.threadReplays} steps on the thread`,
          );
        sameBits(polled.rows, waited.rows);
        return `${polled.rows.length} steps identical, ${polled.stats.threadReplays} replayed on the thread`;
      },
    );
  }
  // Several sequences' attention writing the o product's activations against the product
  // quantizing them itself, and the o product's groups of 3 rows (what qwen2-7b's 3584 rows take)
  // against groups of 2 (MINFER_CUDA_MV_FEW set: not the column-split default), on the quantized
  // files: identical logits.
  for (const path of process.argv.slice(3)) {
    for (const [on, off] of [
      [{ MINFER_CUDA_ATTN_QUANT_ROWS: "64" }, { MINFER_CUDA_ATTN_QUANT_ROWS: "1" }],
      [{ MINFER_CUDA_MV_FEW: "2x3" }, { MINFER_CUDA_MV_FEW: "2x2" }],
      // The q/k/v product with its RoPE epilogue on the column-split mat-vec against the same
      // product on it without the epilogue (rope_store's launch after it).
      [{ MINFER_CUDA_MV_SPLIT: "2" }, { MINFER_CUDA_MV_SPLIT: "2", MINFER_CUDA_QKV_ROPE: "0" }],
    ] as const)
      await check(
        `4 sequences: ${envText(on)} logits bit-identical to ${envText(off)} (${basename(path)})`,
        async () => {
          const fused = await greedyBatch(path, on);
          const plain = await greedyBatch(path, off);
          if (fused.stats.threadReplays === 0)
            throw new Error("no step was replayed on the JavaScript thread");
          sameBits(fused.rows, plain.rows);
          return `${fused.rows.length} rows identical, ${fused.stats.fusedRuns} fused runs against ${plain.stats.fusedRuns}`;
        },
      );
  }
  // Fused launches against MINFER_CUDA_FUSE=0 on stories260K (F32: RoPE + KV stores) and on any
  // GGUF given after OUT (quantized files also fuse each norm with the mat-vecs reading it).
  for (const path of models) {
    await check(
      `fused launches: logits bit-identical to MINFER_CUDA_FUSE=0 (${basename(path)})`,
      async () => {
        const fused = await greedy(path, { MINFER_CUDA_FUSE: "1" }, false);
        const plain = await greedy(path, { MINFER_CUDA_FUSE: "0" }, false);
        if (fused.stats.fusedRuns === 0) throw new Error("no fused run was found in the model's programs");
        if (plain.stats.fusedRuns !== 0)
          throw new Error(`MINFER_CUDA_FUSE=0 still fused ${plain.stats.fusedRuns} runs`);
        sameBits(fused.rows, plain.rows);
        return `${fused.rows.length} steps identical, ${fused.stats.fusedRuns} fused runs`;
      },
    );
  }
  // The sampler's candidate ids (the graph's TOP_K of the logits, ContextOptions.candidates) against
  // a sort of the logits read with them: a 512-token vocabulary (one tile) and, on the quantized
  // files, the qwen2 vocabulary of 152,064 (the selection rounds), over prompt rows and a step of
  // several sequences.
  for (const path of models) {
    await check(`candidate ids: the 64 best of each logits row (${basename(path)})`, async () => {
      const cpuRt = await cpuBackend.devices()[0]!.init({ threads: 1 });
      const gpu = (await dev.init()) as CudaRuntime;
      const probe = await Model.load(path, { runtime: cpuRt });
      const layers = probe.hparams.nLayer;
      probe.dispose();
      const model = await Model.load(path, { runtime: cpuRt, offload: { runtime: gpu, layers } });
      const k = 64;
      const ctx = new Context(model, {
        nCtx: 256,
        nSeqMax: 8,
        kvUnified: false,
        reuseLogits: true,
        candidates: k,
      });
      let rowsChecked = 0;
      try {
        const expectBest = (l: Logits) => {
          for (const i of l.indices) {
            const row = l.get(i);
            const ids = Array.from(row.keys()).sort((a, b) =>
              row[a]! > row[b]! ? -1 : row[a]! < row[b]! ? 1 : a - b,
            );
            const got = l.candidates(i);
            for (let j = 0; j < k; j++)
              if (got[j] !== ids[j])
                throw new Error(
                  `row ${i}: candidate ${j} is ${got[j]}, the sort says ${ids[j]} (vocabulary ${row.length})`,
                );
            rowsChecked++;
          }
        };
        const prompt = model.tokenizer.encode("Once upon a time, there was a little girl", {
          addSpecial: true,
        });
        expectBest(await ctx.decode({ tokens: prompt, seq: 0, logits: "all" }));
        const seqs = [0, 1, 2, 3, 4, 5, 6, 7];
        expectBest(await ctx.decode({ tokens: seqs.map((q) => 100 + 37 * q), seq: seqs, logits: "all" }));
      } finally {
        ctx.dispose();
        model.dispose();
        gpu.dispose();
        cpuRt.dispose();
      }
      return `${rowsChecked} rows, ${k} ids each, equal to the sort`;
    });
  }
  rt.dispose();
}
const text = JSON.stringify(report, null, 2);
console.log(text);
if (process.argv[2]) writeFileSync(join(process.argv[2], "cuda-smoke.json"), text);
process.exit(report.checks.every((c) => c.ok) ? 0 : 1);
