import { type GgufFile, readGguf } from "@minfer/gguf";
import type { DeviceRuntime, DType } from "@minfer/ir";
import { type ArchModule, architecture, type Hparams, type ModelTensors } from "@minfer/models";
import type { TensorBinding } from "@minfer/scheduler";
import { ChatTemplate, chatTemplatesFromMetadata, Tokenizer } from "@minfer/tokenizer";
import { EngineError } from "./errors.js";
import { mergeRanges, type Offload, Placement } from "./placement.js";
import { weightUnsupported } from "./weight-home.js";

/** Options of {@link Model.load}. */
export interface ModelLoadOptions {
  /** The started device the weights live on (the CPU when some layers are offloaded). */
  readonly runtime: DeviceRuntime;
  /** Blocks to run on a second device (a GPU): the first `layers` of them (all: the output head too). */
  readonly offload?: Offload;
  /** The file's header when the caller has read it already (`readGguf(path)`): not read again. */
  readonly file?: GgufFile;
  /** Called as weights are mapped: the fraction done, 0…1 (the last call is 1). */
  readonly onProgress?: (fraction: number) => void;
}

/** A weight of an offloaded layer kept on the main runtime, and why. */
export interface WeightKept {
  readonly name: string;
  readonly dtype: DType;
  /** The offload device that cannot run its products. */
  readonly device: string;
  readonly reason: string;
}

/**
 * A loaded model: the GGUF header, its tokenizer and chat templates, architecture,
 * hyperparameters, checked tensors and the weights bound to device buffers (mapped from the
 * file by the runtime).
 */
export class Model {
  private constructor(
    readonly path: string,
    readonly file: GgufFile,
    readonly tokenizer: Tokenizer,
    /** The file's chat templates by name ("default" is `tokenizer.chat_template`), parsed and checked at load. */
    readonly chatTemplates: ReadonlyMap<string, ChatTemplate>,
    readonly arch: ArchModule,
    readonly hparams: Hparams,
    readonly tensors: ModelTensors,
    readonly runtime: DeviceRuntime,
    readonly weights: ReadonlyMap<string, TensorBinding>,
    /** Which device holds each layer's weights and K/V. */
    readonly placement: Placement,
    /**
     * Weights of offloaded layers that stay on the main runtime because the offload device cannot
     * run their products (the products then run on the main runtime too).
     */
    readonly weightsKept: readonly WeightKept[] = [],
  ) {}

  /** The default chat template, or undefined when the file has none. */
  get chatTemplate(): ChatTemplate | undefined {
    return this.chatTemplates.get("default");
  }

  /**
   * Reads the header, checks the architecture, hyperparameters, tensors and chat templates (an
   * unsupported template is refused here, naming the construct), then maps the weights.
   */
  static async load(path: string, options: ModelLoadOptions): Promise<Model> {
    const { runtime, onProgress } = options;
    if (typeof path !== "string" || path === "")
      throw new EngineError("INVALID_ARGUMENT", "Model.load: give the path of a GGUF file");
    const file = options.file ?? (await readGguf(path));
    const tokenizer = Tokenizer.fromMetadata(file.metadata);
    const templates = new Map<string, ChatTemplate>();
    for (const [name, source] of chatTemplatesFromMetadata(file.metadata))
      templates.set(name, ChatTemplate.parse(source, name));
    const arch = architecture(file.metadata.architecture);
    const hparams = arch.loadHparams(file.metadata);
    const tensors = arch.loadTensors(hparams, file.tensors);
    if (tokenizer.vocab.tokens.length !== hparams.nVocab)
      throw new EngineError(
        "BAD_MODEL",
        `${path}: the vocabulary has ${tokenizer.vocab.tokens.length} tokens but the embeddings have ${hparams.nVocab} rows`,
      );
    const infos = new Map(file.tensors.map((t) => [t.name, t]));
    const weightsKept: WeightKept[] = [];
    const placement = new Placement(runtime, hparams.nLayer, options.offload);
    // Weights stay where they are: a host runtime maps each file part's tensor data once and uses
    // it in place; a device runtime uploads runs of neighbouring tensors once. Every weight is
    // bound at its offset in its run, so a graph's programs name a few buffers, not one per tensor.
    const groups = new Map<
      string,
      { runtime: DeviceRuntime; part: number; spans: { name: string; lo: number; hi: number }[] }
    >();
    for (const name of tensors.byName.keys()) {
      const info = infos.get(name);
      if (!info) throw new EngineError("BAD_MODEL", `tensor ${name} is not in ${path}`);
      let rt = placement.weight(name);
      if (rt !== runtime) {
        const why = weightUnsupported(rt, name, info.type as DType, info.dims);
        if (why) {
          weightsKept.push({ name, dtype: info.type as DType, device: rt.device.name, reason: why });
          rt = runtime;
        }
      }
      const key = `${rt.device.name}\u0000${info.part}`;
      const g = groups.get(key) ?? { runtime: rt, part: info.part, spans: [] };
      g.spans.push({ name, lo: info.offset, hi: info.offset + info.byteSize });
      groups.set(key, g);
    }
    const runs = [...groups.values()].flatMap((g) =>
      mergeRanges(g.spans, g.runtime.device.caps.hostMemory ? Number.POSITIVE_INFINITY : 1 << 20).map(
        (r) => ({
          ...r,
          runtime: g.runtime,
          part: g.part,
        }),
      ),
    );
    const total = runs.reduce((a, r) => a + (r.hi - r.lo), 0);
    let done = 0;
    const weights = new Map<string, TensorBinding>();
    const buffers: { dispose(): void }[] = [];
    try {
      for (const r of runs) {
        const part = file.parts[r.part]!;
        const buffer = await r.runtime.mapFile(
          part.path ?? path,
          part.dataOffset + r.lo,
          r.hi - r.lo,
          `weights:${r.part}@${r.lo}`,
        );
        buffers.push(buffer);
        for (const name of r.names) weights.set(name, { buffer, offset: infos.get(name)!.offset - r.lo });
        done += r.hi - r.lo;
        onProgress?.(total > 0 ? done / total : 1);
      }
    } catch (e) {
      for (const b of buffers) b.dispose();
      throw e;
    }
    if (runs.length === 0) onProgress?.(1);
    return new Model(
      path,
      file,
      tokenizer,
      templates,
      arch,
      hparams,
      tensors,
      runtime,
      weights,
      placement,
      weightsKept,
    );
  }

  /** Releases the weight buffers (not the runtime). */
  dispose(): void {
    for (const b of new Set([...this.weights.values()].map((w) => w.buffer))) b.dispose();
  }
}
