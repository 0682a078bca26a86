import type { GgufFile } from "@minfer/gguf";
import { type Device, fuse } from "@minfer/ir";
import { type KvDtype, kvDtypeId, parseKvDtype } from "@minfer/kvcache";
import { architecture, type Hparams } from "@minfer/models";
import { Allocator, assign } from "@minfer/scheduler";
import { contextSize, DEFAULT_N_UBATCH, kvBytesPerLayer } from "./context-size.js";
import { EngineError } from "./errors.js";
import { swaCells } from "./kv-store.js";

const GIB = 2 ** 30;

/**
 * Room an offload plan keeps free on the device beyond the weights, the K/V and the activation
 * arena: the driver's context, streams, the executor's scratch and fragmentation.
 */
export const DEVICE_OVERHEAD_BYTES = GIB;

/** Bytes of each block's weights, of the output head, of the embeddings, and of each block's K/V. */
export interface LayerSizes {
  readonly blocks: readonly number[];
  readonly head: number;
  readonly embd: number;
  /** The largest block's K/V. */
  readonly kvPerLayer: number;
  /** Each block's K/V (a sliding-window layer's cache is smaller). */
  readonly kvBlocks: readonly number[];
}

/**
 * The bytes a file's weights and a context's K/V take per block (GGUF names `blk.<il>.…`): each
 * block's K/V at `cells(il)` cells (default: nCtx for every block).
 */
export function layerSizes(
  file: GgufFile,
  hp: Hparams,
  nCtx: number,
  kvDtype?: KvDtype,
  cells: (il: number) => number = () => nCtx,
): LayerSizes {
  const blocks = new Array<number>(hp.nLayer).fill(0);
  let head = 0;
  let embd = 0;
  for (const t of file.tensors) {
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m && Number(m[1]) < hp.nLayer) blocks[Number(m[1])]! += t.byteSize;
    else if (t.name.startsWith("token_embd")) embd += t.byteSize;
    else head += t.byteSize;
  }
  const kvBlocks = blocks.map((_, il) => kvBytesPerLayer(hp, cells(il), kvDtype));
  return { blocks, head, embd, kvPerLayer: Math.max(0, ...kvBlocks), kvBlocks };
}

/**
 * How many blocks fit in `free` bytes: the embeddings (which go with block 0), then blocks and
 * their K/V in order, then the output head with the last one, keeping `reserve` bytes for the
 * activation arena and the device's own overhead.
 */
export function fitLayers(sizes: LayerSizes, free: number, reserve: number): number {
  let used = reserve + sizes.embd;
  let n = 0;
  for (const b of sizes.blocks) {
    const kv = sizes.kvBlocks[n] ?? sizes.kvPerLayer;
    const extra = b + kv + (n + 1 === sizes.blocks.length ? sizes.head : 0);
    if (used + extra > free) break;
    used += extra;
    n++;
  }
  return n;
}

/** Options of {@link planOffload}. */
export interface OffloadPlanOptions {
  /** The device blocks are offloaded to (a GPU). */
  readonly device: Device;
  /** The main device, which runs what the offload device lacks (the CPU). */
  readonly host: Device;
  /** Requested context size, as {@link ContextOptions.nCtx} (undefined: the default; 0: the training context). */
  readonly nCtx?: number;
  /** Micro-batch size of the worst-case graph. Default: {@link DEFAULT_N_UBATCH} (the Context's). */
  readonly nUbatch?: number;
  /** Sequences decoded together (outputs of the worst-case graph). Default: 1. */
  readonly nSeqMax?: number;
  /** K/V element type. Default: f16. */
  readonly kvDtype?: string;
  /** Bytes free on the device. Default: `device.memory().free`. */
  readonly free?: number;
  /** Bytes kept for the device's own use. Default: {@link DEVICE_OVERHEAD_BYTES}. */
  readonly overhead?: number;
}

/** What {@link planOffload} decided, with the numbers behind it. */
export interface OffloadPlan {
  /** Blocks that fit on the device (0 … nLayer). */
  readonly layers: number;
  readonly nLayer: number;
  /** Context size the plan is for. */
  readonly nCtx: number;
  readonly kvDtype: KvDtype;
  readonly free: number;
  /** The activation arena the scheduler's allocator reserves on the device with every block there. */
  readonly arenaBytes: number;
  readonly overhead: number;
  readonly sizes: LayerSizes;
  /** One line: "28/28 layers fit in 139.1 GiB free (arena 0.31 GiB, K/V 0.11 GiB per layer, f16)". */
  describe(): string;
}

/**
 * Sizes an offload before anything is loaded: the worst-case decode graph (a full micro-batch
 * over the whole context) is built from the file's tensor table, assigned with every block on
 * `device`, and planned by the scheduler's allocator — the arena a Context would reserve there.
 * Then blocks are fitted in order with their K/V at `kvDtype`'s size.
 */
export function planOffload(file: GgufFile, options: OffloadPlanOptions): OffloadPlan {
  const arch = architecture(file.metadata.architecture);
  const hp = arch.loadHparams(file.metadata);
  const tensors = arch.loadTensors(hp, file.tensors);
  const nCtx = contextSize(options.nCtx, hp.nCtxTrain);
  if (!Number.isInteger(nCtx) || nCtx < 1)
    throw new EngineError("INVALID_ARGUMENT", `nCtx must be a positive integer, got ${String(options.nCtx)}`);
  let kvDtype: KvDtype;
  try {
    kvDtype = parseKvDtype(options.kvDtype ?? "f16");
  } catch (e) {
    throw new EngineError("INVALID_ARGUMENT", `kvDtype: ${(e as Error).message}`, { cause: e });
  }
  const nUbatch = Math.min(options.nUbatch ?? DEFAULT_N_UBATCH, nCtx);
  const nSeqMax = options.nSeqMax ?? 1;
  const window = arch.slidingWindow(hp);
  const nSwa = window > 0 ? swaCells({ window, nCtx, nUbatch, nSeqMax, regions: false }) : 0;
  const groups = arch.kvLayers(hp).map((l) => l.group);
  const built = arch.buildGraph(hp, {
    nTokens: nUbatch,
    nKv: nCtx,
    nOutputs: Math.min(nUbatch, nSeqMax),
    spans: false,
    nCtx,
    ...(nSwa > 0 ? { swa: { nCtx: nSwa, nKv: nSwa } } : {}),
    kvDtype: kvDtypeId(kvDtype),
    contextSize: nCtx,
    tensors,
  });
  const graph = fuse(built.graph);
  const device = options.device.name;
  const weights = new Map<string, string>();
  const states = new Map<string, string>();
  for (const t of graph.tensors) {
    if (t.kind === "weight") weights.set(t.source ?? t.name, device);
    else if (t.kind === "state") states.set(t.source ?? t.name, device);
  }
  const assignment = assign(graph, { devices: [options.device, options.host], weights, states });
  const arenaBytes = new Allocator(device).plan(assignment).size;
  const overhead = options.overhead ?? DEVICE_OVERHEAD_BYTES;
  const free = options.free ?? options.device.memory().free;
  const sizes = layerSizes(file, hp, nCtx, kvDtype, (il) => (groups[il] === "swa" ? nSwa : nCtx));
  const layers = fitLayers(sizes, free, overhead + arenaBytes);
  const gib = (n: number) => (n / GIB).toFixed(2);
  return {
    layers,
    nLayer: hp.nLayer,
    nCtx,
    kvDtype,
    free,
    arenaBytes,
    overhead,
    sizes,
    describe: () =>
      `${layers}/${hp.nLayer} layers fit in ${gib(free)} GiB free on ${device} (arena ${gib(arenaBytes)} GiB, ` +
      `K/V ${gib(sizes.kvPerLayer)} GiB per layer at ${kvDtype}, ${gib(overhead)} GiB kept for the device)`,
  };
}
