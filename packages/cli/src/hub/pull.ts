// A model reference to files in the cache: a file reference is that file; a quantization reference
// is the repository's GGUF(s) of that tag (every part of a split model), from the hub's file list.

import { type CachedFile, cachePath, findCached } from "./cache.js";
import type { HubConfig } from "./config.js";
import { type DownloadOptions, downloadFile } from "./download.js";
import { HubError } from "./hub-error.js";
import { type FileRef, formatFileRef, type ModelRef, type QuantRef } from "./model-ref.js";

export function resolveUrl(config: HubConfig, ref: FileRef): string {
  const path = ref.file.split("/").map(encodeURIComponent).join("/");
  return `${config.endpoint}/${ref.owner}/${ref.repo}/resolve/${encodeURIComponent(ref.revision)}/${path}`;
}

const PART = /-(\d{5})-of-(\d{5})\.gguf$/i;

/** The GGUF files of a repository whose name carries the tag as a whole word (Q4_K: not Q4_K_M), in order. */
export function pickQuantFiles(files: readonly string[], quant: string): string[] {
  const tag = new RegExp(`(^|[-._])${quant.replace(/[.]/g, "\\.")}($|[-.])`, "i");
  return files
    .filter((f) => {
      const base = f.split("/").pop() ?? f;
      return /\.gguf$/i.test(base) && tag.test(base.replace(/\.gguf$/i, "").replace(/-\d{5}-of-\d{5}$/, ""));
    })
    .sort();
}

async function listRepo(config: HubConfig, ref: QuantRef, token?: string): Promise<string[]> {
  const url = `${config.endpoint}/api/models/${ref.owner}/${ref.repo}/tree/${encodeURIComponent(ref.revision)}?recursive=true`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { "user-agent": "minfer", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  } catch (e) {
    throw new HubError(
      "DOWNLOAD_FAILED",
      `cannot reach ${url}: ${(e as Error).cause ?? (e as Error).message}`,
    );
  }
  if (res.status === 404)
    throw new HubError("NOT_FOUND", `${ref.owner}/${ref.repo} (revision ${ref.revision}) was not found`);
  if (!res.ok)
    throw new HubError("HTTP_ERROR", `listing ${ref.owner}/${ref.repo}: ${url} answered ${res.status}`);
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new HubError("HTTP_ERROR", `listing ${ref.owner}/${ref.repo}: ${url} did not answer JSON`);
  }
  if (!Array.isArray(body))
    throw new HubError("HTTP_ERROR", `listing ${ref.owner}/${ref.repo}: not a file list`);
  return body
    .filter(
      (e): e is { type: string; path: string } =>
        typeof e === "object" && e !== null && typeof (e as { path?: unknown }).path === "string",
    )
    .filter((e) => e.type === undefined || e.type === "file")
    .map((e) => e.path);
}

/** The file references a model reference stands for (a split model's parts in order). */
export async function resolveRef(config: HubConfig, ref: ModelRef): Promise<FileRef[]> {
  if (ref.kind === "file") return [ref];
  const files = await listRepo(config, ref, config.token);
  const hits = pickQuantFiles(files, ref.quant);
  const ggufs = files.filter((f) => f.toLowerCase().endsWith(".gguf"));
  if (hits.length === 0)
    throw new HubError(
      "NOT_FOUND",
      `${ref.owner}/${ref.repo} has no GGUF file tagged ${ref.quant}${ggufs.length ? `; its GGUF files: ${ggufs.join(", ")}` : " (it has no GGUF files)"}`,
    );
  const parts = hits.filter((f) => PART.test(f));
  if (hits.length > 1 && parts.length !== hits.length)
    throw new HubError(
      "AMBIGUOUS",
      `${ref.owner}/${ref.repo}: several files are tagged ${ref.quant}: ${hits.join(", ")}; name one with hf://${ref.owner}/${ref.repo}/FILE`,
    );
  return hits.map((file) => ({
    kind: "file",
    owner: ref.owner,
    repo: ref.repo,
    file,
    revision: ref.revision,
  }));
}

export interface PullResult {
  readonly files: readonly (CachedFile & { readonly reused: boolean })[];
}

/** Brings every file of `ref` into the cache (reusing complete ones); the first is the model to load. */
export async function pull(config: HubConfig, ref: ModelRef, o: DownloadOptions = {}): Promise<PullResult> {
  const refs = await resolveRef(config, ref);
  const files: (CachedFile & { reused: boolean })[] = [];
  for (const r of refs) {
    const cached = await findCached(config, r);
    if (cached) {
      files.push({ ...cached, reused: true });
      continue;
    }
    const path = cachePath(config, r);
    const meta = await downloadFile(resolveUrl(config, r), path, formatFileRef(r), r.revision, {
      token: config.token,
      ...o,
    });
    files.push({ ref: r, path, meta, reused: false });
  }
  return { files };
}
