// Model names: hf://OWNER/REPO/PATH/FILE.gguf (one file) and [hf://]OWNER/REPO[:QUANT] (the repository's
// GGUF of that quantization, Q4_K_M when none is named, as llama.cpp's -hf).
import { HubError } from "./hub-error.js";

/** One file of a repository. */
export interface FileRef {
  readonly kind: "file";
  readonly owner: string;
  readonly repo: string;
  /** The file's path in the repository (segments joined by "/"). */
  readonly file: string;
  readonly revision: string;
}

/** A repository and a quantization tag, resolved against the repository's file list. */
export interface QuantRef {
  readonly kind: "quant";
  readonly owner: string;
  readonly repo: string;
  readonly quant: string;
  readonly revision: string;
}

export type ModelRef = FileRef | QuantRef;

/** The tag taken when a reference names none (llama.cpp's -hf default). */
export const DEFAULT_QUANT = "Q4_K_M";

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;
const SEGMENT = /^[A-Za-z0-9._+ ()[\]-]{1,255}$/;
const QUANT = /^[A-Za-z0-9_.-]{1,32}$/;
const REVISION = /^[A-Za-z0-9._/-]{1,255}$/;

/** Whether `s` is a hub reference for `-m` (it starts with hf://). */
export function isHubRef(s: string): boolean {
  return s.startsWith("hf://");
}

function checkName(what: string, s: string, ref: string): string {
  if (!NAME.test(s) || s === "." || s === "..")
    throw new HubError(
      "INVALID_ARGUMENT",
      `${JSON.stringify(ref)}: ${what} ${JSON.stringify(s)} is not a valid name`,
    );
  return s;
}

/** Parses a model reference; anything that could leave the cache directory or the repository is refused. */
export function parseModelRef(ref: string, revision = "main"): ModelRef {
  if (!REVISION.test(revision) || revision.split("/").some((p) => p === "" || p === "." || p === ".."))
    throw new HubError("INVALID_ARGUMENT", `revision ${JSON.stringify(revision)} is not valid`);
  const body = ref.startsWith("hf://") ? ref.slice(5) : ref;
  const parts = body.split("/");
  if (parts.length < 2)
    throw new HubError(
      "INVALID_ARGUMENT",
      `${JSON.stringify(ref)} is not a model reference: use hf://OWNER/REPO/FILE.gguf or OWNER/REPO[:QUANT]`,
    );
  const owner = checkName("owner", parts[0]!, ref);
  if (parts.length === 2) {
    const [repoPart, quant, extra] = parts[1]!.split(":");
    if (extra !== undefined)
      throw new HubError("INVALID_ARGUMENT", `${JSON.stringify(ref)}: more than one ":"`);
    const repo = checkName("repository", repoPart!, ref);
    const tag = quant ?? DEFAULT_QUANT;
    if (!QUANT.test(tag))
      throw new HubError(
        "INVALID_ARGUMENT",
        `${JSON.stringify(ref)}: quantization ${JSON.stringify(tag)} is not valid`,
      );
    return { kind: "quant", owner, repo, quant: tag, revision };
  }
  const repo = checkName("repository", parts[1]!, ref);
  const segments = parts.slice(2);
  for (const s of segments)
    if (!SEGMENT.test(s) || s === "." || s === "..")
      throw new HubError(
        "INVALID_ARGUMENT",
        `${JSON.stringify(ref)}: path segment ${JSON.stringify(s)} is not valid`,
      );
  const file = segments.join("/");
  if (!file.toLowerCase().endsWith(".gguf"))
    throw new HubError("INVALID_ARGUMENT", `${JSON.stringify(ref)}: the file must be a .gguf`);
  return { kind: "file", owner, repo, file, revision };
}

/** A file reference written back as hf://OWNER/REPO/FILE. */
export function formatFileRef(r: FileRef): string {
  return `hf://${r.owner}/${r.repo}/${r.file}`;
}
