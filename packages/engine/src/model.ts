import { type GgufFile, readGguf } from "@minfer/gguf";
import type { DeviceRuntime } from "@minfer/ir";
import { type ArchModule, architecture, type Hparams, type ModelTensors } from "@minfer/models";
import type { TensorBinding } from "@minfer/scheduler";
import { Tokenizer } from "@minfer/tokenizer";

/** Options of {@link Model.load}. */
export interface ModelLoadOptions {
  /** The started device the weights live on. */
  readonly runtime: DeviceRuntime;
}

/**
 * A loaded model: the GGUF header, its tokenizer, architecture, hyperparameters, checked tensors
 * and the weights bound to device buffers (mapped in place when the runtime can map files).
 */
export class Model {
  /** Notes about how the model was loaded (e.g. weights copied instead of mapped). */
  readonly diagnostics: string[];

  private constructor(
    readonly path: string,
    readonly file: GgufFile,
    readonly tokenizer: Tokenizer,
    readonly arch: ArchModule,
    readonly hparams: Hparams,
    readonly tensors: ModelTensors,
    readonly runtime: DeviceRuntime,
    readonly weights: ReadonlyMap<string, TensorBinding>,
    diagnostics: string[],
  ) {
    this.diagnostics = diagnostics;
  }

  static async load(path: string, options: ModelLoadOptions): Promise<Model> {
    const { runtime } = options;
    const file = await readGguf(path);
    const tokenizer = Tokenizer.fromMetadata(file.metadata);
    const arch = architecture(file.metadata.architecture);
    const hparams = arch.loadHparams(file.metadata);
    const tensors = arch.loadTensors(hparams, file.tensors);
    const diagnostics: string[] = [];
    const infos = new Map(file.tensors.map((t) => [t.name, t]));
    const canMap = typeof (runtime as Partial<DeviceRuntime>).mapFile === "function";
    if (!canMap)
      diagnostics.push(
        `${runtime.device.name}: the runtime cannot map files; weights are copied into device memory`,
      );
    const weights = new Map<string, TensorBinding>();
    try {
      for (const name of tensors.byName.keys()) {
        const info = infos.get(name);
        if (!info) throw new Error(`tensor ${name} is not in ${path}`);
        const part = file.parts[info.part];
        const partPath = part?.path ?? path;
        const offset = (part?.dataOffset ?? 0) + info.offset;
        if (canMap) {
          weights.set(name, { buffer: await runtime.mapFile(partPath, offset, info.byteSize, name) });
        } else {
          const buffer = runtime.allocate(info.byteSize, name);
          await runtime.write(buffer, 0, await readRange(partPath, offset, info.byteSize));
          weights.set(name, { buffer });
        }
      }
    } catch (e) {
      for (const w of weights.values()) w.buffer.dispose();
      throw e;
    }
    return new Model(path, file, tokenizer, arch, hparams, tensors, runtime, weights, diagnostics);
  }

  /** Releases the weight buffers (not the runtime). */
  dispose(): void {
    for (const w of this.weights.values()) w.buffer.dispose();
  }
}

async function readRange(path: string, offset: number, length: number): Promise<Uint8Array> {
  const { open } = await import("node:fs/promises");
  const fh = await open(path, "r");
  try {
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(out, done, length - done, offset + done);
      if (bytesRead === 0) throw new Error(`${path}: unexpected end of file`);
      done += bytesRead;
    }
    return out;
  } finally {
    await fh.close();
  }
}
