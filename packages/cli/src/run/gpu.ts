import { type ContextOptions, contextSize, kvBytesPerLayer } from "@minfer/engine";
import type { GgufFile } from "@minfer/gguf";
import type { Device, DeviceRuntime } from "@minfer/ir";
import { architecture } from "@minfer/models";
import { CliError } from "../errors.js";
import type { RunSettings } from "./options.js";

const GIB = 2 ** 30;

/** The CUDA backend when it is installed and usable here, with its lines for diagnostics. */
async function cudaDevice(): Promise<{ device: Device | undefined; diagnostics: string[] }> {
  try {
    const { backend } = await import("@minfer/backend-cuda");
    const device = backend.score() > 0 ? backend.devices()[0] : undefined;
    return { device, diagnostics: [...backend.diagnostics()] };
  } catch (e) {
    return {
      device: undefined,
      diagnostics: [`cuda: @minfer/backend-cuda did not load: ${(e as Error).message}`],
    };
  }
}

/** Bytes of each block's weights, of the rest (embeddings, output head), and of one block's K/V. */
export function layerBytes(
  file: GgufFile,
  nCtx: number,
  kvDtype?: ContextOptions["kvDtype"],
): { blocks: number[]; head: number; embd: number; kvPerLayer: number } {
  const hp = architecture(file.metadata.architecture).loadHparams(file.metadata);
  const blocks = new Array<number>(hp.nLayer).fill(0);
  let head = 0;
  let embd = 0;
  for (const t of file.tensors) {
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m && Number(m[1]) < hp.nLayer) blocks[Number(m[1])]! += t.byteSize;
    else if (t.name.startsWith("token_embd")) embd += t.byteSize;
    else head += t.byteSize;
  }
  const kvPerLayer = kvBytesPerLayer(hp, nCtx, kvDtype);
  return { blocks, head, embd, kvPerLayer };
}

/**
 * How many blocks fit in `free` bytes: the embeddings (with block 0), then blocks and their K/V
 * in order, then the output head with the last one, keeping `reserve` bytes for activations,
 * scratch and the CUDA context.
 */
export function fitLayers(
  sizes: { blocks: number[]; head: number; embd: number; kvPerLayer: number },
  free: number,
  reserve: number,
): number {
  let used = reserve + sizes.embd;
  let n = 0;
  for (const b of sizes.blocks) {
    const extra = b + sizes.kvPerLayer + (n + 1 === sizes.blocks.length ? sizes.head : 0);
    if (used + extra > free) break;
    used += extra;
    n++;
  }
  return n;
}

/** What -ngl decided: the GPU runtime and the blocks it runs (none: CPU only), and why. */
export interface GpuChoice {
  readonly runtime: DeviceRuntime | undefined;
  readonly layers: number;
  readonly note: string;
}

/**
 * Resolves -ngl against the machine: a count or `all` needs a usable CUDA GPU (else an error
 * that says why); `auto` (the default) fits by free memory and falls back to the CPU only when
 * no GPU is usable, saying so with the reason.
 */
export async function chooseGpu(file: GgufFile, settings: RunSettings, verbose: boolean): Promise<GpuChoice> {
  const asked = settings.gpuLayers ?? "auto";
  if (asked === 0) return { runtime: undefined, layers: 0, note: "cpu only (-ngl 0)" };
  const { device, diagnostics } = await cudaDevice();
  if (verbose) for (const line of diagnostics) process.stderr.write(`${line}\n`);
  if (!device) {
    const why = diagnostics.filter((l) => /unusable|did not load/.test(l)).join("; ") || "no CUDA device";
    if (asked === "auto") return { runtime: undefined, layers: 0, note: `cpu only (no usable GPU: ${why})` };
    throw new CliError(
      "BAD_VALUE",
      `-ngl ${asked}: no usable CUDA GPU (${why}); use -ngl 0 for the CPU only`,
    );
  }
  const hp = architecture(file.metadata.architecture).loadHparams(file.metadata);
  const nCtx = contextSize(settings.nCtx, hp.nCtxTrain);
  let layers: number;
  let how: string;
  if (asked === "all") {
    layers = hp.nLayer;
    how = "-ngl all";
  } else if (asked === "auto") {
    const nUbatch = settings.nUbatch ?? 512;
    const activations = nUbatch * (hp.nVocab + 8 * hp.nEmbd + 3 * hp.nFf) * 4;
    const { free } = device.memory();
    layers = fitLayers(layerBytes(file, nCtx, settings.kvDtype), free, GIB + activations);
    how = `-ngl auto: ${(free / GIB).toFixed(1)} GiB free`;
  } else {
    layers = Math.min(asked, hp.nLayer);
    how = `-ngl ${asked}`;
  }
  if (layers === 0) return { runtime: undefined, layers: 0, note: `cpu only (${how}: not one layer fits)` };
  const runtime = await device.init();
  return { runtime, layers, note: how };
}
