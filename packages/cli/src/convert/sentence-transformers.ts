// The pooling a sentence-transformers checkpoint declares: modules.json names its Pooling module's
// folder, whose config.json says mean, CLS or last-token pooling. llama.cpp's converter
// (TextModel._try_set_pooling_type) writes it as `<arch>.pooling_type`.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ConvertError } from "./errors.js";

/** llama.cpp's enum llama_pooling_type, as `<arch>.pooling_type` holds it. */
export const PoolingType = { NONE: 0, MEAN: 1, CLS: 2, LAST: 3, RANK: 4 } as const;

export interface SentenceTransformersPooling {
  /** The pooling type, or undefined when the checkpoint has no sentence-transformers Pooling module. */
  type: number | undefined;
  notes: string[];
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
}

const POOLING_MODULE = "sentence_transformers.models.Pooling";

/**
 * The pooling of checkpoint `dir` from modules.json and its Pooling module's config.json; a
 * pooling llama.cpp has no type for (max, weighted mean, …) is refused. Modules after the
 * pooling that change the vector (Dense) are named in the notes: they are not converted.
 */
export function readSentenceTransformersPooling(dir: string): SentenceTransformersPooling {
  const modulesPath = join(dir, "modules.json");
  if (!existsSync(modulesPath)) return { type: undefined, notes: [] };
  const modules = readJson(modulesPath);
  if (!Array.isArray(modules)) throw new ConvertError("BAD_FILE", `${modulesPath}: not a list of modules`);
  const notes: string[] = [];
  let poolingPath: string | undefined;
  for (const m of modules as { type?: unknown; path?: unknown }[]) {
    if (m?.type === POOLING_MODULE && poolingPath === undefined) {
      if (typeof m.path !== "string")
        throw new ConvertError("BAD_FILE", `${modulesPath}: the Pooling module has no "path"`);
      poolingPath = m.path;
    } else if (typeof m?.type === "string" && /\.Dense$/.test(m.type))
      notes.push(
        `modules.json's ${m.type} module is not converted: the GGUF's embeddings are the pooled ones before it`,
      );
  }
  if (poolingPath === undefined) return { type: undefined, notes };
  const cfgPath = join(dir, poolingPath, "config.json");
  if (!existsSync(cfgPath))
    throw new ConvertError("MISSING_FILE", `${cfgPath} (the Pooling module modules.json names) is missing`);
  const cfg = readJson(cfgPath) as Record<string, unknown>;
  if (typeof cfg !== "object" || cfg === null || Array.isArray(cfg))
    throw new ConvertError("BAD_FILE", `${cfgPath}: not a JSON object`);
  // The first mode set wins, in llama.cpp's order.
  if (cfg.pooling_mode_mean_tokens === true) return { type: PoolingType.MEAN, notes };
  if (cfg.pooling_mode_cls_token === true) return { type: PoolingType.CLS, notes };
  if (cfg.pooling_mode_lasttoken === true) return { type: PoolingType.LAST, notes };
  const set = Object.entries(cfg)
    .filter(([k, v]) => k.startsWith("pooling_mode_") && v === true)
    .map(([k]) => k);
  throw new ConvertError(
    "UNSUPPORTED_CONFIG",
    `${cfgPath}: pooling ${set.length ? set.join(", ") : "(no mode set)"} has no llama.cpp pooling type; supported: pooling_mode_mean_tokens, pooling_mode_cls_token, pooling_mode_lasttoken`,
  );
}
