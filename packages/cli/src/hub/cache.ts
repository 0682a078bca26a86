// The local model cache: CACHE/models/OWNER/REPO/REVISION/FILE, beside it FILE.json (where it came
// from, its size and sha256), and while downloading FILE.partial with FILE.partial.json (what the
// partial bytes belong to, so a resume never mixes two versions of a file).
import { readdir, readFile, rm, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import type { HubConfig } from "./config.js";
import { HubError } from "./hub-error.js";
import { type FileRef, formatFileRef, parseModelRef } from "./model-ref.js";

/** What the cache records of a downloaded file. */
export interface CachedMeta {
  readonly ref: string;
  readonly revision: string;
  readonly url: string;
  readonly size: number;
  /** The file's sha256 (lower-case hex), computed after the download. */
  readonly sha256: string;
  /** What was checked against the server's word: its sha256, or (none published) only its size. */
  readonly checked: "sha256" | "size";
  readonly etag?: string;
  readonly downloadedAt: string;
}

export interface CachedFile {
  readonly ref: FileRef;
  readonly path: string;
  readonly meta: CachedMeta;
}

export function modelsRoot(config: HubConfig): string {
  return join(config.cacheDir, "models");
}

/** The cache path of a file reference (inside the cache by construction: parseModelRef refuses "..", "/"-led parts). */
export function cachePath(config: HubConfig, ref: FileRef): string {
  return join(modelsRoot(config), ref.owner, ref.repo, ...ref.revision.split("/"), ...ref.file.split("/"));
}

export const metaPath = (path: string) => `${path}.json`;
export const partialPath = (path: string) => `${path}.partial`;

async function readMeta(path: string): Promise<CachedMeta | undefined> {
  try {
    const m = JSON.parse(await readFile(metaPath(path), "utf8")) as CachedMeta;
    return typeof m.size === "number" && typeof m.url === "string" ? m : undefined;
  } catch {
    return undefined;
  }
}

/** The cached file of `ref` when it is complete (its recorded size on disk), else undefined. */
export async function findCached(config: HubConfig, ref: FileRef): Promise<CachedFile | undefined> {
  const path = cachePath(config, ref);
  const meta = await readMeta(path);
  if (!meta) return undefined;
  try {
    if ((await stat(path)).size !== meta.size) return undefined;
  } catch {
    return undefined;
  }
  return { ref, path, meta };
}

async function walk(dir: string, out: string[]): Promise<void> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await walk(p, out);
    else if (e.isFile() && e.name.toLowerCase().endsWith(".gguf")) out.push(p);
  }
}

/** Every complete file in the cache, sorted by reference. */
export async function listCached(config: HubConfig): Promise<CachedFile[]> {
  const root = modelsRoot(config);
  const files: string[] = [];
  await walk(root, files);
  const out: CachedFile[] = [];
  for (const path of files) {
    const meta = await readMeta(path);
    if (!meta) continue;
    let ref: FileRef;
    try {
      const r = parseModelRef(meta.ref, meta.revision);
      if (r.kind !== "file" || cachePath(config, r) !== path) continue;
      ref = r;
    } catch {
      continue;
    }
    const c = await findCached(config, ref);
    if (c) out.push(c);
  }
  return out.sort((a, b) => formatFileRef(a.ref).localeCompare(formatFileRef(b.ref)));
}

/** Removes a cached file (and its records and any partial download); false when nothing was there. */
export async function removeCached(config: HubConfig, ref: FileRef): Promise<boolean> {
  const path = cachePath(config, ref);
  const rel = relative(modelsRoot(config), path);
  if (rel.startsWith("..") || rel.split(sep).includes(".."))
    throw new HubError("INVALID_ARGUMENT", `${formatFileRef(ref)} is outside the cache`);
  let found = false;
  for (const p of [path, metaPath(path), partialPath(path), metaPath(partialPath(path))]) {
    try {
      await stat(p);
      found = true;
      await rm(p, { force: true });
    } catch {
      // absent
    }
  }
  return found;
}
