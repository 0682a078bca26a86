/**
 * Model.load over mutated models (scripts/fuzz/gguf-mutate.mjs: hyperparameters, tokenizer
 * arrays, chat templates, the tensor table, header counts and offsets): each file loads, or is
 * refused with a coded error of minfer's packages, within a time bound.
 *
 * Each iteration has its own PRNG from (seed, subject, iteration): MINFER_FUZZ_SEED=<seed> replays
 * a run, MINFER_FUZZ_REPLAY=<subject>:<iteration> one file alone; MINFER_FUZZ_SCALE multiplies
 * the count.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import type { DeviceRuntime } from "@minfer/ir";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FuzzSubject, iterationRng, loadSubjects, mutate } from "../../../scripts/fuzz/gguf-mutate.mjs";
import { Model } from "./model.js";

const SEED = Number(process.env.MINFER_FUZZ_SEED ?? 0x10ad);
const SCALE = Number(process.env.MINFER_FUZZ_SCALE ?? 1);
const REPLAY = process.env.MINFER_FUZZ_REPLAY?.split(":").map(Number);
/** Files per subject. */
const PER_SUBJECT = Math.max(1, Math.round(75 * SCALE));
/** A load (or refusal) slower than this is a failure: nothing here should take a second. */
const MAX_MS = 3000;
/** The error classes of minfer's packages; each carries a string `code`. */
const FAMILIES = new Set([
  "ModelError",
  "EngineError",
  "GgufError",
  "TokenizerError",
  "IrError",
  "CpuBackendError",
]);

let runtime: DeviceRuntime;
let subjects: FuzzSubject[];
let dir: string;
const outcomes = new Map<string, number>();
let slowest = 0;

beforeAll(async () => {
  subjects = loadSubjects();
  runtime = await cpuBackend.devices()[0]!.init({ threads: 1 });
  dir = mkdtempSync(join(tmpdir(), "minfer-load-fuzz-"));
});

afterAll(() => {
  runtime?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
  const counts = [...outcomes].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`);
  console.log(`load fuzz: seed ${SEED}, slowest ${slowest.toFixed(0)} ms; ${counts.join(", ")}`);
});

/** What went wrong with one file, or undefined: loaded, or refused with a coded minfer error. */
async function loadOne(path: string): Promise<string | undefined> {
  const t0 = performance.now();
  let outcome: string | undefined;
  try {
    const model = await Model.load(path, { runtime });
    model.dispose();
    outcomes.set("loaded", (outcomes.get("loaded") ?? 0) + 1);
  } catch (e) {
    const err = e as Error & { code?: unknown };
    const coded =
      err instanceof Error &&
      FAMILIES.has(err.name) &&
      typeof err.code === "string" &&
      /^[A-Z][A-Z0-9_]*$/.test(err.code);
    if (coded) outcomes.set(err.code as string, (outcomes.get(err.code as string) ?? 0) + 1);
    else outcome = `uncoded ${err?.name}: ${err?.message}\n${err?.stack?.split("\n").slice(1, 4).join("\n")}`;
  }
  const ms = performance.now() - t0;
  slowest = Math.max(slowest, ms);
  if (ms > MAX_MS) outcome = `${outcome ?? "finished"} after ${ms.toFixed(0)} ms (bound ${MAX_MS} ms)`;
  return outcome;
}

describe("Model.load refuses a hostile file with a coded error, never a crash", () => {
  for (const [index, name] of [
    "stories260K",
    "llama-2-tiny-random",
    "qwen3-tiny-bpe-f16",
    "qwen2-tiny-bpe-q8_0",
  ].entries()) {
    it(`${PER_SUBJECT} mutations of subject ${index} (${name})`, async () => {
      const s = subjects[index]!;
      expect(s.name).toBe(name);
      const failures: string[] = [];
      for (let i = 0; i < PER_SUBJECT; i++) {
        if (REPLAY && (REPLAY[0] !== index || REPLAY[1] !== i)) continue;
        const { bytes, ops } = mutate(s, iterationRng(SEED, index, i));
        const path = join(dir, `${index}-${i}.gguf`);
        writeFileSync(path, bytes);
        const bad = await loadOne(path);
        rmSync(path);
        if (bad)
          failures.push(
            `MINFER_FUZZ_SEED=${SEED} MINFER_FUZZ_REPLAY=${index}:${i} (${name}) ops=[${ops.join("; ")}]: ${bad}`,
          );
        if (failures.length >= 5) break;
      }
      expect(failures, failures.join("\n")).toEqual([]);
    });
  }
});
