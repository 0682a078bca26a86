import { type GgufFile, readGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { type ArchModule, architecture, type Hparams, type ModelTensors } from "@minfer/models";
import type { TensorBinding } from "@minfer/scheduler";
import { Tokenizer } from "@minfer/tokenizer";
import { EngineError } from "./errors.js";

/** Options of {@link Model.load}. */
export interface ModelLoadOptions {
  /** The started device the weights live on. */
  readonly runtime: DeviceRuntime;
}

/**
 * A loaded model: the GGUF header, its tokenizer, architecture, hyperparameters, checked tensors
 * and the weights bound to device buffers (mapped from the file by the runtime).
 */
export class Model {
  private constructor(
    readonly path: string,
    readonly file: GgufFile,
    readonly tokenizer: Tokenizer,
    readonly arch: ArchModule,
    readonly hparams: Hparams,
    readonly tensors: ModelTensors,
    readonly runtime: DeviceRuntime,
    readonly weights: ReadonlyMap<string, TensorBinding>,
  ) {}

  static async load(path: string, options: ModelLoadOptions): Promise<Model> {
    const { runtime } = options;
    const file = await readGguf(path);
    const tokenizer = Tokenizer.fromMetadata(file.metadata);
    const arch = architecture(file.metadata.architecture);
    const hparams = arch.loadHparams(file.metadata);
    const tensors = arch.loadTensors(hparams, file.tensors);
    const infos = new Map(file.tensors.map((t) => [t.name, t]));
    // Weights stay where they are: the runtime maps them from the file (the CPU uses them in
    // place; a GPU runtime uploads them once).
    const weights = new Map<string, TensorBinding>();
    try {
      for (const name of tensors.byName.keys()) {
        const info = infos.get(name);
        if (!info) throw new EngineError("BAD_MODEL", `tensor ${name} is not in ${path}`);
        const part = file.parts[info.part]!;
        weights.set(name, {
          buffer: await runtime.mapFile(
            part.path ?? path,
            part.dataOffset + info.offset,
            info.byteSize,
            name,
          ),
        });
      }
    } catch (e) {
      for (const w of weights.values()) w.buffer.dispose();
      throw e;
    }
    return new Model(path, file, tokenizer, arch, hparams, tensors, runtime, weights);
  }

  /** Releases the weight buffers (not the runtime). */
  dispose(): void {
    for (const w of this.weights.values()) w.buffer.dispose();
  }
}
