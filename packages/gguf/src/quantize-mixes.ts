// llama.cpp's quantization mixes ("Q3_K_M", "Q4_K_S", …): which ggml type each tensor of a model
// gets, following the choices of llama_tensor_get_type in llama.cpp's src/llama-quant.cpp (written
// anew here, checked against llama-quantize's output in quantize-mixes.test.ts).
import { MIX_FILE_TYPE } from "./file-type.js";
import { GgmlType, type GgmlTypeId } from "./ggml-types.js";
import { type GgufKV, GgufMetadata } from "./metadata.js";

/** The mixes, by the names llama-quantize takes (each is also a `general.file_type`). */
export const QUANT_MIXES = [
  "Q4_0",
  "Q4_1",
  "Q5_0",
  "Q5_1",
  "Q8_0",
  "Q2_K",
  "Q3_K_S",
  "Q3_K_M",
  "Q3_K_L",
  "Q4_K_S",
  "Q4_K_M",
  "Q5_K_S",
  "Q5_K_M",
  "Q6_K",
  "IQ4_NL",
  "IQ4_XS",
  "IQ1_S",
  "IQ1_M",
  "IQ2_XXS",
  "IQ2_XS",
  "IQ2_S",
  "IQ2_M",
  "IQ3_XXS",
  "IQ3_XS",
  "IQ3_S",
  "IQ3_M",
  "TQ1_0",
  "TQ2_0",
] as const;
export type QuantMix = (typeof QUANT_MIXES)[number];

const T = GgmlType;

/** The type most matrices of a mix get (llama.cpp's default type of the file type). */
const MIX_BASE: Readonly<Record<QuantMix, GgmlTypeId>> = {
  Q4_0: T.Q4_0,
  Q4_1: T.Q4_1,
  Q5_0: T.Q5_0,
  Q5_1: T.Q5_1,
  Q8_0: T.Q8_0,
  Q2_K: T.Q2_K,
  Q3_K_S: T.Q3_K,
  Q3_K_M: T.Q3_K,
  Q3_K_L: T.Q3_K,
  Q4_K_S: T.Q4_K,
  Q4_K_M: T.Q4_K,
  Q5_K_S: T.Q5_K,
  Q5_K_M: T.Q5_K,
  Q6_K: T.Q6_K,
  IQ4_NL: T.IQ4_NL,
  IQ4_XS: T.IQ4_XS,
  IQ1_S: T.IQ1_S,
  IQ1_M: T.IQ1_M,
  IQ2_XXS: T.IQ2_XXS,
  IQ2_XS: T.IQ2_XS,
  IQ2_S: T.IQ2_XS, // sic: llama.cpp's IQ2_S mix is mostly IQ2_XS, its IQ2_M mostly IQ2_S
  IQ2_M: T.IQ2_S,
  IQ3_XXS: T.IQ3_XXS,
  IQ3_XS: T.IQ3_S,
  IQ3_S: T.IQ3_S,
  IQ3_M: T.IQ3_S,
  TQ1_0: T.TQ1_0,
  TQ2_0: T.TQ2_0,
};

/** The mix called `name` (any case), or `undefined`. */
export function quantMixByName(name: string): QuantMix | undefined {
  const upper = name.toUpperCase();
  return (QUANT_MIXES as readonly string[]).includes(upper) ? (upper as QuantMix) : undefined;
}

/** The base type and `general.file_type` of a mix. */
export function mixInfo(mix: QuantMix): { base: GgmlTypeId; fileType: number } {
  return { base: MIX_BASE[mix], fileType: MIX_FILE_TYPE[mix]! };
}

/** What the rules of a mix read of a model besides its tensors' names and shapes. */
export interface ModelFacts {
  /** `general.architecture`. */
  readonly arch?: string;
  /** `<arch>.block_count`. */
  readonly layers?: number;
  /** `<arch>.attention.head_count` (of the first layer when it is an array). */
  readonly heads?: number;
  /** `<arch>.attention.head_count_kv`; the head count when absent. */
  readonly kvHeads?: number;
  /** `<arch>.expert_count`; 0 for a dense model. */
  readonly experts?: number;
  /**
   * Whether the quantization uses an importance matrix (llama-quantize's `--imatrix`), which
   * changes the first layers' ffn_down in the IQ4_NL, IQ4_XS, Q4_0 and Q5_0 mixes. Default false.
   */
  readonly imatrix?: boolean;
}

function firstNumber(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return firstNumber((v as ArrayLike<unknown>)[0]);
  return undefined;
}

/** The {@link ModelFacts} of a file's metadata (what is missing stays `undefined`). */
export function modelFacts(metadata: GgufMetadata | Iterable<GgufKV>): ModelFacts {
  const md = metadata instanceof GgufMetadata ? metadata : new GgufMetadata(metadata);
  const archValue = md.value("general.architecture");
  if (typeof archValue !== "string") return {};
  const get = (suffix: string) => firstNumber(md.value(`${archValue}.${suffix}`));
  const heads = get("attention.head_count");
  return {
    arch: archValue,
    layers: get("block_count"),
    heads,
    kvHeads: get("attention.head_count_kv") ?? heads,
    experts: get("expert_count") ?? 0,
  };
}

/** The role of a tensor in the rules, from its name (first match in this order, as llama.cpp). */
export type TensorRole =
  | "output"
  | "token_embd"
  | "attn_v" // attn_v, and the fused attn_qkv and attn_kv_b, which follow the same rules
  | "attn_k"
  | "attn_q"
  | "attn_output"
  | "ffn_up"
  | "ffn_gate"
  | "ffn_down"
  | "other";

const ROLE_BY_SUBSTRING: readonly [string, TensorRole][] = [
  ["attn_qkv.weight", "attn_v"],
  ["attn_kv_b.weight", "attn_v"],
  ["attn_v.weight", "attn_v"],
  ["attn_k.weight", "attn_k"],
  ["attn_q.weight", "attn_q"],
  ["attn_output.weight", "attn_output"],
  ["ffn_up", "ffn_up"],
  ["ffn_gate", "ffn_gate"],
  ["ffn_down", "ffn_down"],
];

export function tensorRole(name: string): TensorRole {
  if (name === "output.weight") return "output";
  if (name === "token_embd.weight" || name === "per_layer_token_embd.weight") return "token_embd";
  for (const [part, role] of ROLE_BY_SUBSTRING) if (name.includes(part)) return role;
  return "other";
}

// Matrices llama.cpp leaves in their type whatever the file type: small or index-like tensors.
const NEVER_QUANTIZED_PARTS = [
  "_norm.weight",
  "ffn_gate_inp.weight",
  "ffn_gate_tid2eid.weight",
  "altup",
  "laurel",
  "per_layer_model_proj",
  "ssm_conv1d",
  "shortconv.conv.weight",
  "indexer.k_proj.weight",
  "indexer.q_proj.weight",
  "attn_rel_b.weight",
  ".position_embd",
  "sam.pos_embd",
  "sam.neck.",
  "sam.net_",
  ".rel_pos",
  ".patch_embd",
  ".patch_merger",
  "a.rvq.codebook",
  "mm.a.code_embd",
];
const NEVER_QUANTIZED_NAMES = new Set(["position_embd.weight", "token_types.weight"]);
const RWKV_SMALL = /time_mix_(first|w[012]|v[012]|a[012]|g[12]|decay_w[12]|lerp_fused)\.weight/;

/**
 * Whether llama.cpp quantizes a tensor at all: a matrix (2 or more dimensions above 1) whose
 * name ends in `weight`, and not one of the small tensors it keeps (norms, MoE routers, …).
 */
export function isQuantizable(name: string, dims: readonly number[]): boolean {
  let n = dims.length;
  while (n > 0 && dims[n - 1] === 1) n--;
  if (n < 2 || !name.endsWith("weight")) return false;
  if (NEVER_QUANTIZED_NAMES.has(name) || RWKV_SMALL.test(name)) return false;
  return !NEVER_QUANTIZED_PARTS.some((part) => name.includes(part));
}

/** llama.cpp's use_more_bits(i, n): the first and last eighth of the layers, and every third between. */
export function useMoreBits(i: number, n: number): boolean {
  const e = Math.floor(n / 8);
  return i < e || i >= Math.floor((7 * n) / 8) || (i - e) % 3 === 2;
}

/** The layer of `blk.N.…`, or -1. */
function layerOf(name: string): number {
  const m = /^blk\.(\d+)/.exec(name);
  return m ? Number(m[1]) : -1;
}

/** Architectures whose 70B size llama.cpp recognizes by layer count (its attn_v gets Q5_K). */
function is70B(f: ModelFacts): boolean {
  const { arch, layers, heads, kvHeads, experts = 0 } = f;
  if (arch === "llama") return experts !== 8 && layers === 80 && heads !== kvHeads;
  if (arch === "qwen2" || arch === "olmo" || arch === "deci") return layers === 80;
  return arch === "jais2" && layers === 68;
}

/** Everything one tensor's rule reads. */
interface Ctx {
  readonly mix: QuantMix;
  readonly base: GgmlTypeId;
  readonly falcon: boolean;
  readonly experts: number;
  readonly gqa: number;
  readonly big: boolean;
  readonly imatrix: boolean;
  /** The layer the rule sees and the layer count. */
  readonly i: number;
  readonly n: number;
}

const is = (mix: QuantMix, ...mixes: QuantMix[]) => mixes.includes(mix);

function attnVType(c: Ctx): GgmlTypeId {
  let t = c.base;
  const { mix } = c;
  if (mix === "Q2_K") t = c.gqa >= 4 ? T.Q4_K : T.Q3_K;
  else if (mix === "Q3_K_M") t = c.i < 2 ? T.Q5_K : T.Q4_K;
  else if (mix === "Q3_K_L") t = T.Q5_K;
  else if (is(mix, "IQ4_NL", "IQ4_XS") && c.gqa >= 4) t = T.Q5_K;
  else if (is(mix, "Q4_K_M", "Q5_K_M") && useMoreBits(c.i, c.n)) t = T.Q6_K;
  else if (mix === "Q4_K_S" && c.i < 4) t = T.Q5_K;
  else if (mix === "IQ3_XXS") t = c.gqa >= 4 ? T.Q4_K : c.imatrix ? T.IQ3_XXS : T.IQ3_S;
  else if ((is(mix, "IQ3_XS", "IQ3_S") && c.gqa >= 4) || mix === "IQ3_M") t = T.Q4_K;
  if (c.big && (t === T.Q3_K || t === T.Q4_K)) t = T.Q5_K;
  return c.experts === 8 ? T.Q8_0 : t;
}

function ffnDownType(c: Ctx): GgmlTypeId {
  const { mix, i, n, falcon } = c;
  const more = useMoreBits(i, n);
  switch (mix) {
    case "Q2_K":
      return T.Q3_K;
    case "Q3_K_M":
      return i < Math.floor(n / 16) ? T.Q5_K : !falcon || more ? T.Q4_K : T.Q3_K;
    case "Q3_K_L":
      return falcon ? T.Q4_K : T.Q5_K;
    case "Q4_K_M":
      if (falcon) return i < Math.floor(n / 16) ? T.Q6_K : more ? T.Q5_K : T.Q4_K;
      return more ? T.Q6_K : c.base;
    case "IQ4_NL":
    case "IQ4_XS":
      return i < Math.floor(n / 8) && !c.imatrix ? T.Q5_K : c.base;
    case "Q4_0":
      return c.imatrix && i < Math.floor(n / 8) ? T.Q4_1 : c.base;
    case "Q5_0":
      return c.imatrix && i < Math.floor(n / 8) ? T.Q5_1 : c.base;
    case "Q5_K_M":
      return more ? T.Q6_K : c.base;
    case "Q4_K_S":
      return !falcon && i < Math.floor(n / 8) ? T.Q5_K : c.base;
    case "IQ3_XXS":
      return c.imatrix ? c.base : i < Math.floor(n / 8) ? T.Q4_K : T.Q3_K;
    case "IQ3_M":
      return i < Math.floor(n / 8) || (c.experts === 8 && more) ? T.Q4_K : c.base;
    default:
      return c.base;
  }
}

/** attn_output of an 8-expert model in these mixes: Q5_K. */
const ATTN_OUTPUT_8X: readonly QuantMix[] = [
  "Q2_K",
  "Q3_K_S",
  "Q3_K_M",
  "IQ4_NL",
  "Q4_K_S",
  "Q4_K_M",
  "IQ4_XS",
  "IQ3_XS",
  "IQ3_XXS",
  "IQ3_S",
  "IQ3_M",
];
/** attn_output of a dense model, by mix (others keep the base type). */
const ATTN_OUTPUT: Partial<Record<QuantMix, GgmlTypeId>> = {
  Q2_K: T.Q3_K,
  Q3_K_M: T.Q4_K,
  Q3_K_L: T.Q5_K,
  IQ3_XXS: T.IQ3_S,
  IQ3_M: T.Q4_K,
};

function attnOutputType(c: Ctx): GgmlTypeId {
  if (c.falcon) return c.mix === "Q3_K_L" ? T.Q4_K : c.base;
  if (c.experts === 8) return ATTN_OUTPUT_8X.includes(c.mix) ? T.Q5_K : c.base;
  return ATTN_OUTPUT[c.mix] ?? c.base;
}

/** The type of output.weight (and of token_embd.weight when the output reuses it). */
function outputType(c: Ctx, row: number, baseBlock: number): GgmlTypeId {
  if (c.falcon || row % baseBlock !== 0) return T.Q8_0;
  if (LOW_BIT.includes(c.mix) || c.mix === "IQ3_XXS") return T.Q5_K;
  return c.base === T.Q8_0 ? T.Q8_0 : T.Q6_K;
}

/** The mixes below 3 bits, whose rules are their own (llama.cpp gives them one branch). */
const LOW_BIT: readonly QuantMix[] = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M"];

/** token_embd.weight of an untied model, by mix (others keep the base type). */
const TOKEN_EMBD: Partial<Record<QuantMix, GgmlTypeId>> = {
  IQ1_S: T.Q2_K,
  IQ1_M: T.Q2_K,
  IQ2_XXS: T.Q2_K,
  IQ2_XS: T.Q2_K,
  IQ2_S: T.IQ3_S,
  IQ2_M: T.IQ3_S,
  IQ3_XXS: T.IQ3_S,
  TQ1_0: T.Q4_K,
  TQ2_0: T.Q4_K,
};

/**
 * A tensor's type in the {@link LOW_BIT} mixes: attn_v, the first eighth of ffn_down (by count)
 * and attn_output get more bits; the IQ2_S and IQ2_M mixes give them IQ3_S, the others Q2_K.
 */
function lowBitType(c: Ctx, role: TensorRole): GgmlTypeId {
  const wide = is(c.mix, "IQ2_S", "IQ2_M");
  if (role === "attn_v") return c.gqa >= 4 || c.experts >= 4 ? T.Q4_K : wide ? T.IQ3_S : T.Q2_K;
  if (role === "attn_k" && c.experts === 8) return T.Q4_K;
  if (role === "ffn_down" && c.i < Math.floor(c.n / 8)) return wide ? T.IQ3_S : T.Q2_K;
  if (role === "attn_output") {
    if (c.experts === 8) return T.Q5_K;
    if (is(c.mix, "IQ1_S", "IQ1_M")) return T.IQ2_XXS;
    if (wide) return T.IQ3_S;
  }
  return c.base;
}

/** attn_q and attn_k in the IQ3_XS and IQ3_XXS mixes (the 8-expert attn_k rule comes first). */
const ATTN_QK: Partial<Record<QuantMix, GgmlTypeId>> = { IQ3_XS: T.IQ3_XXS, IQ3_XXS: T.IQ2_S };

/** ffn_gate and ffn_up of the IQ3_XS mix: IQ3_XXS in the middle three quarters of the layers. */
function ffnGateUpType(c: Ctx): GgmlTypeId {
  const middle = c.i >= Math.floor(c.n / 8) && c.i < Math.floor((7 * c.n) / 8);
  return c.mix === "IQ3_XS" && middle ? T.IQ3_XXS : c.base;
}

/** The GQA ratio from the shapes of the first attn_q / attn_k (when the metadata does not say). */
function gqaFromShapes(tensors: readonly { name: string; dims: readonly number[] }[]): number {
  const q = tensors.find((t) => /^blk\.\d+\.attn_q\.weight$/.test(t.name));
  const k = q ? tensors.find((t) => t.name === q.name.replace("attn_q.", "attn_k.")) : undefined;
  return q && k?.dims[1] ? Math.floor(q.dims[1]! / k.dims[1]) : 1;
}

/**
 * The type each tensor wants in `mix` before llama.cpp's row-size fallback: the rules of
 * llama_tensor_get_type for a file without an importance matrix. `blockSize(type)` gives a type's
 * block; `quantizable[i]` says whether llama.cpp quantizes tensor `i` at all (others keep their
 * type, and their entry here means nothing). Facts missing from `facts` are read off the tensors:
 * the layer count from the highest `blk.N`, the GQA ratio from attn_q / attn_k shapes.
 */
export function mixTypes(
  tensors: readonly { name: string; dims: readonly number[] }[],
  mix: QuantMix,
  facts: ModelFacts,
  quantizable: readonly boolean[],
  blockSize: (type: GgmlTypeId) => number,
): GgmlTypeId[] {
  const base = MIX_BASE[mix];
  const roles = tensors.map((t) => tensorRole(t.name));
  const tied = !roles.includes("output");
  const layers = facts.layers ?? Math.max(0, ...tensors.map((t) => layerOf(t.name) + 1));
  const gqa =
    facts.heads !== undefined && facts.kvHeads !== undefined
      ? facts.kvHeads === 0
        ? 0
        : Math.floor(facts.heads / facts.kvHeads)
      : gqaFromShapes(tensors);
  const experts = facts.experts ?? 0;
  const common = {
    mix,
    base,
    falcon: facts.arch === "falcon",
    experts,
    gqa,
    big: is70B(facts),
    imatrix: facts.imatrix === true,
  };
  const nAttnV = roles.filter((r) => r === "attn_v").length;
  // llama.cpp visits tensors by layer (non-layer tensors first), then by name; its attn_v and
  // ffn_down counters follow that order.
  const order = tensors
    .map((t, i) => ({ i, layer: layerOf(t.name), name: t.name }))
    .sort((a, b) => a.layer - b.layer || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let iAttnV = 0;
  let iFfnDown = 0;
  let iFfnGate = 0;
  let iFfnUp = 0;
  const out: GgmlTypeId[] = tensors.map(() => base);
  for (const { i, layer } of order) {
    if (!quantizable[i]) continue;
    const role = roles[i]!;
    if (role === "output" || (tied && role === "token_embd")) {
      out[i] = outputType({ ...common, i: 0, n: 0 }, tensors[i]!.dims[0]!, blockSize(base));
    } else if (role === "token_embd") {
      out[i] = TOKEN_EMBD[mix] ?? base;
    } else if (LOW_BIT.includes(mix)) {
      // (Of llama.cpp's counters only ffn_down's is read in these mixes.)
      out[i] = lowBitType({ ...common, i: role === "ffn_down" ? iFfnDown++ : 0, n: layers }, role);
    } else if (role === "ffn_gate" || role === "ffn_up") {
      const k = role === "ffn_gate" ? iFfnGate++ : iFfnUp++;
      out[i] = ffnGateUpType({ ...common, i: experts > 1 ? layer : k, n: layers });
    } else if (role === "attn_q") {
      out[i] = ATTN_QK[mix] ?? base;
    } else if (role === "attn_v") {
      out[i] = attnVType({ ...common, i: iAttnV++, n: nAttnV });
    } else if (role === "attn_k") {
      out[i] = experts === 8 ? T.Q8_0 : (ATTN_QK[mix] ?? base);
    } else if (role === "ffn_down") {
      out[i] = ffnDownType({ ...common, i: experts > 1 ? layer : iFfnDown, n: layers });
      iFfnDown++;
    } else if (role === "attn_output") {
      out[i] = attnOutputType({ ...common, i: layer, n: layers });
    }
  }
  return out;
}
