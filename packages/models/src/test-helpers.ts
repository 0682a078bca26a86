import { type GgufKV, GgufMetadata, synthesizeModel } from "@minfer/gguf";
import type { TensorInfo } from "./tensors.js";

/** Metadata and tensor infos of a `tiny` synthetic model (nothing is written or generated). */
export function tinyModel(arch: "llama" | "qwen2" | "qwen3"): {
  kvs: GgufKV[];
  meta: GgufMetadata;
  infos: TensorInfo[];
} {
  const m = synthesizeModel({ preset: "tiny", arch, type: "f32" });
  const infos = m.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type }));
  return { kvs: m.metadata, meta: new GgufMetadata(m.metadata), infos };
}

/** The same metadata without `key`, or with it replaced. */
export function withoutKey(kvs: readonly GgufKV[], key: string, replace?: GgufKV): GgufMetadata {
  const rest = kvs.filter((kv) => kv.key !== key);
  return new GgufMetadata(replace ? [...rest, replace] : rest);
}
