import { type GgufFile, readGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { type ArchModule, architecture, type Hparams, type ModelTensors } from "@minfer/models";
import type { TensorBinding } from "@minfer/scheduler";
import { ChatTemplate, chatTemplatesFromMetadata, Tokenizer } from "@minfer/tokenizer";
import { EngineError } from "./errors.js";

/** Options of {@link Model.load}. */
export interface ModelLoadOptions {
  /** The started device the weights live on. */
  readonly runtime: DeviceRuntime;
  /** Called as weights are mapped: the fraction done, 0…1 (the last call is 1). */
  readonly onProgress?: (fraction: number) => void;
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
    const file = await readGguf(path);
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
    const total = [...tensors.byName.keys()].reduce((a, n) => a + (infos.get(n)?.byteSize ?? 0), 0);
    let done = 0;
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
        done += info.byteSize;
        onProgress?.(total > 0 ? done / total : 1);
      }
    } catch (e) {
      for (const w of weights.values()) w.buffer.dispose();
      throw e;
    }
    if (weights.size === 0) onProgress?.(1);
    return new Model(path, file, tokenizer, templates, arch, hparams, tensors, runtime, weights);
  }

  /** Releases the weight buffers (not the runtime). */
  dispose(): void {
    for (const w of this.weights.values()) w.buffer.dispose();
  }
}
