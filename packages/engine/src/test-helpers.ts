import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { type SynthModel, synthesizeLayout, synthesizeModel, synthVocabSize, writeGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { type SynthShape, synthLayout } from "@minfer/models";
import { Model } from "./model.js";

export const FIXTURES =
  process.env.MINFER_FIXTURES ?? fileURLToPath(new URL("../../../../shared/fixtures", import.meta.url));
export const STORIES = `${FIXTURES}/models/stories260K.gguf`;
export const haveStories = existsSync(STORIES);

type Loaded = { model: Model; runtime: DeviceRuntime; dispose: () => void };

/**
 * Loads a file on a 2-thread CPU runtime; dispose frees both, then runs `after`. The runtime keeps
 * every product on the dot-product kernels (`panelGemm: false`): the batching, micro-batch and
 * sequence tests check the engine's invariances bit-close on F32 files, which the panel GEMM's
 * other summation order for 8+ columns would blur (its results are checked against float64 in the
 * backend's own tests).
 */
async function loadOnCpu(
  path: string,
  after: () => void = () => {},
  threads = 2,
  panelGemm = false,
): Promise<Loaded> {
  const runtime = await cpuBackend.devices()[0]!.init({ threads, panelGemm });
  const model = await Model.load(path, { runtime });
  return {
    model,
    runtime,
    dispose: () => {
      model.dispose();
      runtime.dispose();
      after();
    },
  };
}

/**
 * Loads stories260K on a CPU runtime of `threads` (default 2); call the returned dispose in
 * afterAll. A test of many thousands of tiny decodes takes 1: with CI's other test processes on
 * the same cores, two threads wait for each other at every barrier.
 */
export function loadStories(threads = 2): Promise<Loaded> {
  return loadOnCpu(STORIES, undefined, threads);
}

/**
 * Writes a synthetic model (`minfer gguf synth`'s generator) to a temporary file and loads it on a
 * 2-thread CPU runtime; call the returned dispose in afterAll (it also removes the file).
 * `runtime.panelGemm`: let products of 8+ columns take the panel GEMM (default false, see loadOnCpu).
 */
export function loadSynthetic(
  options: Parameters<typeof synthesizeModel>[0],
  runtime: { panelGemm?: boolean } = {},
): Promise<Loaded> {
  return loadModelOf(synthesizeModel(options), runtime.panelGemm ?? false);
}

/** As {@link loadSynthetic}, for any architecture of @minfer/models at `shape` (byte vocabulary). */
export function loadArch(arch: string, shape: SynthShape, seed = 1): Promise<Loaded> {
  return loadModelOf(
    synthesizeLayout(synthLayout(arch, shape, synthVocabSize(undefined)), { type: "f32", seed }),
  );
}

async function loadModelOf(m: SynthModel, panelGemm = false): Promise<Loaded> {
  const dir = mkdtempSync(join(tmpdir(), "minfer-synth-"));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    const path = join(dir, "model.gguf");
    await writeGguf(path, m.metadata, m.tensors);
    return await loadOnCpu(path, remove, 2, panelGemm);
  } catch (e) {
    remove();
    throw e;
  }
}

/** The largest absolute difference of two equal-length arrays. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`lengths differ: ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
