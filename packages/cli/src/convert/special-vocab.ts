// Special token ids, add_bos/add_eos and chat templates, found as llama.cpp's converter finds them
// (gguf-py's SpecialVocab): tokenizer_config.json's `<type>_token` texts looked up among
// tokenizer.json's added tokens, then config.json's `<type>_token_id` integers; the first found
// wins. add_bos/add_eos from the post-processor's template, overridden by tokenizer_config.json.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { GgufKV } from "@minfer/gguf";
import { ConvertError } from "./errors.js";
import { bool, str, strArray, u32 } from "./kv.js";

/** Special token types and their `tokenizer.ggml.*` key, in llama.cpp's order. */
const KEYS: Record<string, string> = {
  bos: "bos_token_id",
  eos: "eos_token_id",
  unk: "unknown_token_id",
  sep: "seperator_token_id",
  pad: "padding_token_id",
  cls: "cls_token_id",
  mask: "mask_token_id",
  eot: "eot_token_id",
  eom: "eom_token_id",
};
const TYPES = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"] as const;

interface AddedToken {
  id?: unknown;
  content?: unknown;
}
interface TemplatePiece {
  SpecialToken?: { id?: string };
}

export interface SpecialInputs {
  /** tokenizer.json, when the checkpoint has one. */
  tj?: Record<string, unknown>;
  /** tokenizer_config.json, when the checkpoint has one. */
  tc?: Record<string, unknown>;
  /** config.json as read (before text_config is merged). */
  config: Record<string, unknown>;
  /** Tokens in the GGUF vocabulary: an id at or past it is refused. */
  nVocab: number;
}

/** The special ids found so far; `setIfAbsent` adds an architecture's own (never overriding). */
export class SpecialTokens {
  readonly ids = new Map<string, number>();
  readonly add = new Map<string, boolean>();
  readonly notes: string[] = [];

  setIfAbsent(type: string, id: number | undefined): void {
    if (id === undefined || this.ids.has(type)) return;
    this.ids.set(type, id);
  }

  /** The `tokenizer.ggml.*` entries; an id outside the vocabulary is refused. */
  metadata(nVocab: number): GgufKV[] {
    const kv: GgufKV[] = [];
    for (const [type, id] of this.ids) {
      if (id >= nVocab)
        throw new ConvertError(
          "BAD_TOKENIZER",
          `the ${type} token id ${id} is outside the vocabulary of ${nVocab}`,
        );
      kv.push(u32(`tokenizer.ggml.${KEYS[type]}`, id));
    }
    for (const [type, v] of this.add) kv.push(bool(`tokenizer.ggml.add_${type}_token`, v));
    return kv;
  }
}

function tokenText(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  const c = (v as { content?: unknown } | null)?.content;
  return typeof c === "string" ? c : undefined;
}

/** Reads the special tokens of a checkpoint (see the file comment). */
export function readSpecialTokens(o: SpecialInputs): SpecialTokens {
  const s = new SpecialTokens();
  const tc = o.tc ? { ...o.tc } : undefined;
  const added = (Array.isArray(o.tj?.added_tokens) ? o.tj.added_tokens : []) as AddedToken[];
  if (o.tj) {
    let bos = tokenText(tc?.bos_token);
    let eos = tokenText(tc?.eos_token);
    const cls = tokenText(tc?.cls_token);
    const sep = tokenText(tc?.sep_token);
    if (!bos && cls && tc) tc.bos_token = bos = cls;
    if (!eos && sep && tc) tc.eos_token = eos = sep;
    const pp = o.tj.post_processor as { type?: string; processors?: unknown[] } | null | undefined;
    const procs = (pp ? (pp.processors ?? [pp]) : []) as { type?: string; single?: TemplatePiece[] }[];
    for (const p of procs) {
      if (p.type === "RobertaProcessing") {
        s.add.set("bos", true);
        s.add.set("eos", true);
        s.add.set("sep", true);
        continue;
      }
      if (p.type !== "TemplateProcessing" || !Array.isArray(p.single) || p.single.length <= 1) continue;
      const first = p.single[0]?.SpecialToken?.id;
      if (first) {
        if (!tc) bos = first;
        s.add.set("bos", first === bos || first === cls);
      }
      const last = p.single.at(-1)?.SpecialToken?.id;
      if (last) {
        if (!tc) eos = last;
        else if (last !== eos) {
          // The template appends another token than eos_token: it becomes EOS, the old one EOT.
          tc.eot_token = eos;
          tc.eos_token = eos = last;
        }
        s.add.set("eos", last === eos);
      }
    }
  }
  if (tc) {
    const types = [...TYPES, ...(tc.eot_token !== undefined ? (["eot"] as const) : [])];
    for (const type of types) {
      const flag = tc[`add_${type}_token`];
      if (typeof flag === "boolean") s.add.set(type, flag);
      const text = tokenText(tc[`${type}_token`]);
      if (text === undefined) continue;
      const hit = added.find((a) => a.content === text);
      if (typeof hit?.id === "number" && Number.isInteger(hit.id)) s.setIfAbsent(type, hit.id);
    }
  }
  const text = (o.config.text_config ?? {}) as Record<string, unknown>;
  for (const type of TYPES) {
    const id = o.config[`${type}_token_id`] ?? text[`${type}_token_id`];
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0) continue;
    if (id < o.nVocab) s.setIfAbsent(type, id);
    else if (!s.ids.has(type))
      s.notes.push(`config.json's ${type}_token_id ${id} is outside the vocabulary of ${o.nVocab}; left out`);
  }
  return s;
}

/** The id of `text` among tokenizer.json's added tokens. */
export function addedTokenId(tj: Record<string, unknown> | undefined, text: string): number | undefined {
  const added = (Array.isArray(tj?.added_tokens) ? tj.added_tokens : []) as AddedToken[];
  const hit = added.find((a) => a.content === text);
  return typeof hit?.id === "number" ? hit.id : undefined;
}

/** A template name as llama.cpp's writer keeps it: characters other than [A-Za-z0-9] become "_". */
const templateName = (n: string) => n.replace(/[^A-Za-z0-9]/g, "_");

/**
 * The chat template(s): tokenizer_config.json's `chat_template` (a string, or a list of
 * {name, template}), else chat_template.jinja (with additional_chat_templates/*.jinja as named
 * ones), else chat_template.json → tokenizer.chat_template[.NAME] and tokenizer.chat_templates.
 */
export function chatTemplateKeys(dir: string, tc: Record<string, unknown> | undefined): GgufKV[] {
  const cfgPath = join(dir, "tokenizer_config.json");
  let t: unknown = tc?.chat_template;
  if (t === undefined || t === null) {
    const jinja = join(dir, "chat_template.jinja");
    const json = join(dir, "chat_template.json");
    if (existsSync(jinja)) {
      t = readFileSync(jinja, "utf8");
      const extra = join(dir, "additional_chat_templates");
      const more = existsSync(extra) ? readdirSync(extra).filter((f) => f.endsWith(".jinja")) : [];
      if (more.length)
        t = [
          { name: "default", template: t },
          ...more.sort().map((f) => ({
            name: basename(f, ".jinja"),
            template: readFileSync(join(extra, f), "utf8"),
          })),
        ];
    } else if (existsSync(json)) {
      try {
        t = (JSON.parse(readFileSync(json, "utf8")) as { chat_template?: unknown }).chat_template;
      } catch (e) {
        throw new ConvertError("BAD_FILE", `${json}: not valid JSON (${(e as Error).message})`);
      }
    }
  }
  if (t === undefined || t === null) return [];
  if (typeof t === "string") return [str("tokenizer.chat_template", t)];
  if (!Array.isArray(t))
    throw new ConvertError("BAD_TOKENIZER", `${cfgPath}: chat_template is neither a string nor a list`);
  const kv: GgufKV[] = [];
  const names: string[] = [];
  for (const e of t as { name?: unknown; template?: unknown }[]) {
    if (typeof e?.name !== "string" || typeof e.template !== "string")
      throw new ConvertError(
        "BAD_TOKENIZER",
        `${cfgPath}: a chat_template entry lacks a name or template string`,
      );
    const name = templateName(e.name);
    if (name === "default") kv.push(str("tokenizer.chat_template", e.template));
    else if (name) {
      if (!names.includes(name)) names.push(name);
      kv.push(str(`tokenizer.chat_template.${name}`, e.template));
    }
  }
  if (names.length) kv.push(strArray("tokenizer.chat_templates", names));
  return kv;
}
