// `minfer bench -npl …` (run/bench-batched.ts): llama-batched-bench's table and JSON lines, the
// shape of each phase's decode calls, and the logits of batched steps against one sequence alone.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Batch, Context, type Logits } from "@minfer/engine";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { benchCommand } from "./run/bench.js";
import { type BatchedMode, type BatchedTest, batchedRun, cellsNeeded } from "./run/bench-batched.js";
import { type Loaded, loadModel } from "./run/load.js";
import { bin, fixtures, minfer } from "./test-helpers.js";

const stories = join(fixtures, "models/stories260K.gguf");
const have = existsSync(stories);

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
});

const COLUMNS = ["PP", "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s"];

/** The cells of a markdown table row. */
const cells = (line: string) =>
  line
    .split("|")
    .slice(1, -1)
    .map((c) => c.trim());

describe.skipIf(!have)("minfer bench -npl (batched)", () => {
  it("prints llama-batched-bench's table: a row per B, N_KV = B·(PP+TG)", async () => {
    const r = await minfer(
      "bench",
      "-m",
      stories,
      "-npl",
      "1,3",
      "-npp",
      "8",
      "-ntg",
      "4",
      "-r",
      "1",
      "-t",
      "1",
    );
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^n_kv_max = 36, .*is_pp_shared = 0, kv_unified = 0, .*median of 1$/);
    expect(lines[1]).toBe("");
    expect(cells(lines[2]!)).toEqual(COLUMNS);
    expect(lines[3]).toMatch(/^\|(-+\|){10}$/);
    const rows = lines.slice(4).map(cells);
    expect(rows.map((c) => c.slice(0, 4))).toEqual([
      ["8", "4", "1", "12"],
      ["8", "4", "3", "36"],
    ]);
    for (const c of rows) for (const v of c.slice(4)) expect(Number(v)).toBeGreaterThan(0);
  });

  it("--json: one line per test with llama-batched-bench's field names; N_KV with a shared prompt", async () => {
    const args = ["-m", stories, "-npl", "1,4", "-npp", "6,10", "-ntg", "3", "-r", "2", "-t", "1", "--json"];
    for (const [extra, nKv] of [
      [[], (pp: number, pl: number) => pl * (pp + 3)],
      [["-pps"], (pp: number, pl: number) => pl * pp + pl * 3], // copied into each sequence's region
      [["-pps", "-kvu"], (pp: number, pl: number) => pp + pl * 3], // shared cells
    ] as const) {
      const r = await minfer("bench", ...args, ...extra);
      expect(r.code, r.stderr).toBe(0);
      const rows = r.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, number | number[]>);
      expect(rows.map((x) => [x.pp, x.tg, x.pl])).toEqual([
        [6, 3, 1],
        [6, 3, 4],
        [10, 3, 1],
        [10, 3, 4],
      ]);
      for (const x of rows) {
        for (const k of [
          "n_kv_max",
          "n_batch",
          "n_ubatch",
          "flash_attn",
          "is_pp_shared",
          "n_gpu_layers",
          "n_threads",
          "n_threads_batch",
          "t_pp",
          "speed_pp",
          "t_tg",
          "speed_tg",
          "t",
          "speed",
        ])
          expect(x, k).toHaveProperty(k);
        expect(x.n_kv).toBe(nKv(x.pp as number, x.pl as number));
        expect(x.is_pp_shared).toBe(extra.length > 0 ? 1 : 0);
        expect(x.kv_unified).toBe(extra.length > 1 ? 1 : 0);
        expect(x.samples_t_tg).toHaveLength(2);
        expect(x.speed_tg).toBeGreaterThan(0);
        expect(x.t).toBeCloseTo((x.t_pp as number) + (x.t_tg as number), 9);
        expect(x.speed_tg).toBeCloseTo(((x.pl as number) * 3) / (x.t_tg as number), 6);
      }
    }
  });

  it("--verbose: each TG step is one decode call of B tokens with B logits rows", async () => {
    const r = await minfer(
      "bench",
      "-m",
      stories,
      "-npl",
      "5",
      "-npp",
      "7",
      "-ntg",
      "6",
      "-r",
      "1",
      "-t",
      "1",
      "--verbose",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      "pp 7, tg 6, B 5: pp: 1 decode call of 35 tokens, 1 micro-batches, 5 logits rows each\n",
    );
    expect(r.stderr).toContain(
      "pp 7, tg 6, B 5: tg: 6 decode calls of 5 tokens, 6 micro-batches, 5 logits rows each\n",
    );
  });

  it("refuses bad values and mixed modes with a code, before loading the model", async () => {
    for (const [args, message] of [
      [["-npl", "0"], /-npl must be a comma list of integers in \[1, 256\], got "0"/],
      [["-npl", "1.5"], /-npl must be a comma list of integers in \[1, 256\]/],
      [["-npl", "1,,4"], /-npl must be a comma list/],
      [["-npl", "4,x"], /-npl must be a comma list/],
      [["-npl", "257"], /-npl must be a comma list of integers in \[1, 256\], got "257"/],
      [["-npl", "2", "-npp", "0"], /-npp must be a comma list of integers in \[1, /],
      [["-npl", "2", "-ntg", "-1"], /-ntg must be a comma list/],
      [["-npl", "2", "-p", "8"], /-npl \(batched mode\) cannot be combined with -p: give -npp and -ntg/],
      [["-npl", "2", "-n", "8", "-d", "4"], /cannot be combined with -n, -d/],
      [["-npp", "8", "-pps"], /-npp, -pps belong to the batched mode: give -npl too/],
    ] as const) {
      await expect(benchCommand(["-m", stories, ...args]), args.join(" ")).rejects.toMatchObject({
        name: "CliError",
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(message),
      });
    }
    const r = await minfer("bench", "-m", stories, "-npl", "0");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^minfer: -npl must be .*\nusage: minfer bench /);
  });
});

describe.skipIf(!have)("batchedRun", () => {
  let loaded: Loaded;
  beforeAll(async () => {
    loaded = await loadModel(stories, { threads: 1 }, false);
  });
  afterAll(() => loaded?.close());

  /** Runs a test with decode spied on: each call's batch and a copy of its logits rows. */
  async function spied(t: BatchedTest, mode: BatchedMode) {
    const ctx = new Context(loaded.model, {
      nCtx: mode.unified ? cellsNeeded(t, mode) : t.pl * (t.pp + t.tg),
      nSeqMax: t.pl,
      kvUnified: mode.unified,
    });
    const calls: { tokens: number[]; seq: number[]; rows: Map<number, Float32Array> }[] = [];
    const decode = ctx.decode.bind(ctx);
    const spy = vi.spyOn(ctx, "decode").mockImplementation(async (b: Batch): Promise<Logits> => {
      const l = await decode(b);
      const rows = new Map<number, Float32Array>();
      for (const i of l.indices) rows.set(i, l.get(i).slice());
      calls.push({ tokens: Array.from(b.tokens), seq: Array.from(b.seq as ArrayLike<number>), rows });
      return l;
    });
    const run = await batchedRun(ctx, t, mode, 3);
    spy.mockRestore();
    ctx.dispose();
    return { run, calls };
  }

  /** The logits of `tokens` decoded as one sequence alone: the prompt in one call, then one token a call. */
  async function alone(prompt: number[], steps: number[]): Promise<Float32Array[]> {
    const ctx = new Context(loaded.model, { nCtx: prompt.length + steps.length });
    try {
      const out = [(await ctx.eval(prompt)).slice()];
      for (const s of steps) out.push((await ctx.eval([s])).slice());
      return out;
    } finally {
      ctx.dispose();
    }
  }

  const maxDiff = (a: Float32Array, b: Float32Array) =>
    a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

  for (const mode of [
    { shared: false, unified: false },
    { shared: true, unified: false },
    { shared: true, unified: true },
    { shared: false, unified: true },
  ]) {
    it(`one decode call per phase step, and each sequence's logits as if decoded alone (${JSON.stringify(mode)})`, async () => {
      const t = { pp: 9, tg: 5, pl: 4 };
      const { run, calls } = await spied(t, mode);
      const prompts = mode.shared ? 1 : t.pl;
      expect(calls).toHaveLength(1 + t.tg);
      // The prompt phase: every prompt in one call, sequence by sequence, a row per sequence's last token.
      expect(calls[0]!.seq).toEqual(Array.from({ length: prompts * t.pp }, (_, i) => Math.floor(i / t.pp)));
      expect([...calls[0]!.rows.keys()]).toEqual(
        Array.from({ length: prompts }, (_, j) => (j + 1) * t.pp - 1),
      );
      // Each TG step: one token of each sequence, all their logits.
      for (const c of calls.slice(1)) {
        expect(c.seq).toEqual([0, 1, 2, 3]);
        expect([...c.rows.keys()]).toEqual([0, 1, 2, 3]);
      }
      expect(run.tg).toEqual({ calls: t.tg, sizes: [t.pl], ubatches: t.tg, rows: [t.pl] });
      expect(run.nKv).toBe(cellsNeeded(t, mode));
      // Sequence j, decoded alone from its own tokens, gives the batched rows' logits.
      for (let j = 0; j < t.pl; j++) {
        const p = mode.shared ? 0 : j;
        const prompt = calls[0]!.tokens.slice(p * t.pp, (p + 1) * t.pp);
        const steps = calls.slice(1).map((c) => c.tokens[j]!);
        const ref = await alone(prompt, steps);
        expect(maxDiff(calls[0]!.rows.get((p + 1) * t.pp - 1)!, ref[0]!)).toBeLessThan(1e-3);
        for (let i = 0; i < t.tg; i++)
          expect(maxDiff(calls[1 + i]!.rows.get(j)!, ref[1 + i]!), `seq ${j} step ${i}`).toBeLessThan(1e-3);
      }
      // The sequences got different tokens (else the comparison above would prove little).
      expect(new Set(calls[1]!.tokens).size).toBe(t.pl);
    });
  }
});
