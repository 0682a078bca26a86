import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { backend as cpuBackend } from "@minfer/backend-cpu";
import { synthesizeModel, writeGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { Model } from "./model.js";

export const FIXTURES =
  process.env.MINFER_FIXTURES ?? fileURLToPath(new URL("../../../../shared/fixtures", import.meta.url));
export const STORIES = `${FIXTURES}/models/stories260K.gguf`;
export const haveStories = existsSync(STORIES);

/** Loads stories260K on a 2-thread CPU runtime; call the returned dispose in afterAll. */
export async function loadStories(): Promise<{ model: Model; runtime: DeviceRuntime; dispose: () => void }> {
  const runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
  const model = await Model.load(STORIES, { runtime });
  return {
    model,
    runtime,
    dispose: () => {
      model.dispose();
      runtime.dispose();
    },
  };
}

/**
 * Writes a synthetic model (`minfer gguf synth`'s generator) to a temporary file and loads it on a
 * 2-thread CPU runtime; call the returned dispose in afterAll (it also removes the file).
 */
export async function loadSynthetic(
  options: Parameters<typeof synthesizeModel>[0],
): Promise<{ model: Model; runtime: DeviceRuntime; dispose: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "minfer-synth-"));
  try {
    const path = join(dir, "model.gguf");
    const m = synthesizeModel(options);
    await writeGguf(path, m.metadata, m.tensors);
    const runtime = await cpuBackend.devices()[0]!.init({ threads: 2 });
    const model = await Model.load(path, { runtime });
    return {
      model,
      runtime,
      dispose: () => {
        model.dispose();
        runtime.dispose();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
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
