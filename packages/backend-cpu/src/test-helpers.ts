/** Shared helpers of this package's tests (not exported by the package). */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { contiguousStrides, DType, encodeProgram, Op, type ProgramSpec, type Shape } from "@minfer/ir";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The shared fixtures (../shared/fixtures beside the repository, or MINFER_FIXTURES). */
export function fixturesDir(): string {
  const dir = process.env.MINFER_FIXTURES ?? resolve(repo, "../shared/fixtures");
  if (!existsSync(dir)) throw new Error(`test fixtures not found at ${dir}; set MINFER_FIXTURES`);
  return dir;
}

export const storiesPath = (): string => join(fixturesDir(), "models", "stories260K.gguf");

/** F32 [n] tensors a, b, out in buffer slots 0, 1, 2 and one ADD node. */
export function addProgram(n: number, nodes = 1): ProgramSpec {
  const ne: Shape = [n, 1, 1, 1];
  const nb = contiguousStrides(DType.F32, ne);
  const t = (buffer: number) => ({ dtype: DType.F32, buffer, offset: 0, ne, nb });
  return {
    bufferSizes: [4 * n, 4 * n, 4 * n],
    tensors: [t(0), t(1), t(2)],
    nodes: Array.from({ length: nodes }, () => ({ op: Op.ADD, inputs: [0, 1], outputs: [2], params: [] })),
  };
}

export const encode = encodeProgram;

/** Byte offsets inside an encoded program, for corrupting one field at a time. */
export const layout = {
  header: { magic: 0, version: 4, nBuffers: 8, nTensors: 12, nNodes: 16 },
  bufferSize: (i: number) => 32 + 8 * i,
  tensor: (nBuffers: number, i: number) => 32 + 8 * nBuffers + 80 * i,
  node: (nBuffers: number, nTensors: number, i: number) => 32 + 8 * nBuffers + 80 * nTensors + 128 * i,
};
