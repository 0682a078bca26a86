// config.json of a Hugging Face checkpoint: which converter architecture it is, and typed access to
// its keys with the defaults of the transformers config class (llama.cpp's converter reads the
// config through transformers' AutoConfig, so a key config.json leaves out has the class default).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ARCH_SPECS } from "./archs/index.js";
import type { ArchSpec } from "./archs/types.js";
import { ConvertError } from "./errors.js";

type Json = Record<string, unknown>;

/** Typed reads of a config, naming the key (and file) in every refusal. */
export class ConfigReader {
  constructor(
    readonly path: string,
    /** config.json with its `text_config` merged over the top level (as llama.cpp does). */
    readonly raw: Json,
    /** The transformers config class defaults for keys config.json may leave out. */
    readonly defaults: Json = {},
    /** config.json as read. */
    readonly file: Json = raw,
  ) {}

  /** Whether config.json itself gives `key` (not null). */
  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  /** config.json's value, else the class default (null counts as given). */
  value(key: string): unknown {
    return key in this.raw && this.raw[key] !== undefined ? this.raw[key] : this.defaults[key];
  }

  bad(key: string, why: string): ConvertError {
    return new ConvertError("BAD_CONFIG_KEY", `${this.path}: "${key}" ${why}`);
  }

  unsupported(what: string): ConvertError {
    return new ConvertError("UNSUPPORTED_CONFIG", `${this.path}: ${what}`);
  }

  #number(key: string, int: boolean, allowZero: boolean): number | undefined {
    const v = this.value(key);
    if (v === undefined || v === null) return undefined;
    if (
      typeof v !== "number" ||
      !Number.isFinite(v) ||
      v < 0 ||
      (v === 0 && !allowZero) ||
      (int && !Number.isInteger(v))
    )
      throw this.bad(
        key,
        `is ${JSON.stringify(v)}; expected a ${allowZero ? "non-negative" : "positive"} ${int ? "integer" : "number"}`,
      );
    return v;
  }

  /** A positive integer (config.json's or the default); absent from both is MISSING_CONFIG_KEY. */
  int(key: string): number {
    const v = this.#number(key, true, false);
    if (v === undefined)
      throw new ConvertError("MISSING_CONFIG_KEY", `${this.path}: "${key}" is required and missing`);
    return v;
  }

  optInt(key: string): number | undefined {
    return this.#number(key, true, false);
  }

  num(key: string): number {
    const v = this.#number(key, false, false);
    if (v === undefined)
      throw new ConvertError("MISSING_CONFIG_KEY", `${this.path}: "${key}" is required and missing`);
    return v;
  }

  optNum(key: string, opts: { allowZero?: boolean } = {}): number | undefined {
    return this.#number(key, false, opts.allowZero ?? false);
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.value(key);
    if (v === undefined || v === null) return fallback;
    if (typeof v !== "boolean") throw this.bad(key, `is ${JSON.stringify(v)}; expected true or false`);
    return v;
  }

  optString(key: string): string | undefined {
    const v = this.value(key);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw this.bad(key, `is ${JSON.stringify(v)}; expected a string`);
    return v;
  }

  /** An integer token id (a list gives its first element), for display only. */
  tokenId(key: string): number | undefined {
    const v = this.raw[key];
    if (typeof v === "number" && Number.isInteger(v) && v >= 0) return v;
    if (Array.isArray(v) && typeof v[0] === "number") return v[0];
    return undefined;
  }
}

export interface HfConfig {
  spec: ArchSpec;
  /** The class name config.json gives (or its model_type). */
  source: string;
  reader: ConfigReader;
}

function findSpec(archs: string[], modelType: string | undefined): [ArchSpec, string] | undefined {
  for (const a of archs) {
    const spec = ARCH_SPECS.find((s) => s.classes.includes(a));
    if (spec) return [spec, a];
  }
  if (archs.length === 0 && modelType) {
    const spec = ARCH_SPECS.find((s) => s.modelTypes.includes(modelType));
    if (spec) return [spec, modelType];
  }
  return undefined;
}

/**
 * Reads `config.json` of `dir`: an unknown architecture, a quantized checkpoint or a file that is
 * not JSON is refused by name.
 */
export function readHfConfig(dir: string): HfConfig {
  const path = join(dir, "config.json");
  if (!existsSync(path)) throw new ConvertError("MISSING_FILE", `${dir} has no config.json`);
  let file: Json;
  try {
    file = JSON.parse(readFileSync(path, "utf8")) as Json;
  } catch (e) {
    throw new ConvertError("BAD_FILE", `${path}: not valid JSON (${(e as Error).message})`);
  }
  if (typeof file !== "object" || file === null || Array.isArray(file))
    throw new ConvertError("BAD_FILE", `${path}: not a JSON object`);
  const archs = Array.isArray(file.architectures) ? file.architectures.map(String) : [];
  const modelType = typeof file.model_type === "string" ? file.model_type : undefined;
  const hit = findSpec(archs, modelType);
  if (!hit) {
    const named = archs.length ? archs.join(", ") : (modelType ?? "(none given)");
    throw new ConvertError(
      "UNKNOWN_ARCH",
      `${path}: architecture ${named} is not supported; supported: ${ARCH_SPECS.flatMap((s) => s.classes).join(", ")}`,
    );
  }
  const [spec, source] = hit;
  const text = file.text_config;
  const raw: Json =
    text && typeof text === "object" && !Array.isArray(text) ? { ...file, ...(text as Json) } : { ...file };
  const q = raw.quantization_config as Json | undefined;
  if (q && typeof q === "object")
    throw new ConvertError(
      "UNSUPPORTED_CONFIG",
      `${path}: the checkpoint is quantized (quantization_config.quant_method ${JSON.stringify(q.quant_method ?? null)}); only F32/F16/BF16 weights are converted`,
    );
  return { spec, source, reader: new ConfigReader(path, raw, spec.defaults, file) };
}
