// Model files for the fidelity test: `minfer gguf synth` and `minfer gguf quantize` run as the
// built binary (the quantizer's workers are dist files), and what is in them.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ggmlTypeByName, planQuantization, readGguf } from "@minfer/gguf";

/** Runs the built CLI (`dist/bin.js`) with `args`; rejects with its stderr when it fails. */
export async function minferCli(bin: string, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [bin, ...args], { maxBuffer: 16 << 20 });
    return stdout;
  } catch (e) {
    const err = e as { code?: number; stderr?: string };
    throw new Error(`minfer ${args.join(" ")} exited with ${err.code}: ${err.stderr ?? e}`);
  }
}

/** Tensor count by ggml type name, e.g. "Q8_0×14 F32×5". */
export async function weightTypes(path: string): Promise<{ summary: string; byType: Map<string, number> }> {
  const file = await readGguf(path);
  const byType = new Map<string, number>();
  for (const t of file.tensors) byType.set(t.typeName, (byType.get(t.typeName) ?? 0) + 1);
  const summary = [...byType.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([name, n]) => `${name}×${n}`)
    .join(" ");
  return { summary, byType };
}

/** Tensor count by type that `minfer gguf quantize SRC OUT type` would write (its own plan). */
export async function plannedTypes(src: string, type: string): Promise<Map<string, number>> {
  const plan = planQuantization((await readGguf(src)).tensors, ggmlTypeByName(type));
  const byType = new Map<string, number>();
  for (const t of plan) byType.set(t.to.name, (byType.get(t.to.name) ?? 0) + 1);
  return byType;
}
