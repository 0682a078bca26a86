// One file from the hub: its published size and sha256 from the resolve URL's headers (before the
// redirect to the storage host, as the hub sends them: X-Linked-Size / X-Linked-Etag for large files,
// Content-Length / ETag otherwise), then the bytes with Range requests, resuming a partial download,
// hashed as they arrive and checked before the file takes its place in the cache.
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { CachedMeta } from "./cache.js";
import { metaPath, partialPath } from "./cache.js";
import { HubError } from "./hub-error.js";

/** What the hub says of a file before it is fetched. */
export interface RemoteFile {
  /** Where the bytes are (the redirect's target, or the URL itself). */
  readonly location: string;
  readonly size?: number;
  readonly sha256?: string;
  readonly etag?: string;
}

export interface DownloadOptions {
  readonly token?: string;
  /** Attempts in all (a broken connection resumes where it stopped); default 4. */
  readonly attempts?: number;
  /** Milliseconds without a byte before an attempt is abandoned; default 60000. */
  readonly stallMs?: number;
  /** Milliseconds before a retry (doubling); default 500. */
  readonly retryDelayMs?: number;
  /** Called when a file's download starts: its reference and size (0: unknown). */
  readonly onStart?: (ref: string, total: number) => void;
  /** Called as bytes arrive: bytes on disk, total (0: unknown). */
  readonly onProgress?: (done: number, total: number) => void;
  /** Called with a line for the user (a resume, a retry, a missing checksum). */
  readonly onNote?: (line: string) => void;
}

function headers(token: string | undefined, extra: Record<string, string> = {}): Record<string, string> {
  return { "user-agent": "minfer", ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
}

function unquote(etag: string | null): string | undefined {
  if (!etag) return undefined;
  return etag.replace(/^W\//, "").replace(/^"|"$/g, "");
}

function httpError(url: string, status: number, what: string): HubError {
  if (status === 401 || status === 403)
    return new HubError(
      "HTTP_ERROR",
      `${what}: ${url} answered ${status} (a gated or private repository needs HF_TOKEN)`,
    );
  if (status === 404) return new HubError("NOT_FOUND", `${what}: ${url} was not found (404)`);
  return new HubError("HTTP_ERROR", `${what}: ${url} answered ${status}`);
}

/** The file's size, sha256 and location from a HEAD of its resolve URL, following up to 10 redirects. */
export async function describeRemote(url: string, token?: string): Promise<RemoteFile> {
  let at = url;
  let size: number | undefined;
  let sha256: string | undefined;
  let etag: string | undefined;
  for (let hop = 0; hop <= 10; hop++) {
    let res: Response;
    try {
      res = await fetch(at, { method: "HEAD", redirect: "manual", headers: headers(token) });
    } catch (e) {
      throw new HubError(
        "DOWNLOAD_FAILED",
        `cannot reach ${at}: ${(e as Error).cause ?? (e as Error).message}`,
      );
    }
    const linkedSize = res.headers.get("x-linked-size");
    const linkedTag = unquote(res.headers.get("x-linked-etag"));
    const tag = unquote(res.headers.get("etag"));
    if (size === undefined && linkedSize && /^\d+$/.test(linkedSize)) size = Number(linkedSize);
    for (const t of [linkedTag, tag])
      if (sha256 === undefined && t && /^[0-9a-f]{64}$/i.test(t)) sha256 = t.toLowerCase();
    if (etag === undefined) etag = linkedTag ?? tag;
    if (res.status >= 300 && res.status < 400) {
      const loc = res.headers.get("location");
      if (!loc) throw new HubError("HTTP_ERROR", `${at} answered ${res.status} without a Location`);
      at = new URL(loc, at).toString();
      continue;
    }
    if (!res.ok) throw httpError(at, res.status, "looking up the file");
    const len = res.headers.get("content-length");
    if (size === undefined && len && /^\d+$/.test(len)) size = Number(len);
    return {
      location: at,
      ...(size !== undefined ? { size } : {}),
      ...(sha256 ? { sha256 } : {}),
      ...(etag ? { etag } : {}),
    };
  }
  throw new HubError("HTTP_ERROR", `${url}: more than 10 redirects`);
}

interface PartialMeta {
  readonly url: string;
  readonly size?: number;
  readonly sha256?: string;
  readonly etag?: string;
}

async function hashFile(path: string, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

/** Bytes of the partial download that belong to this version of the file (0: start over). */
async function resumable(partial: string, remote: RemoteFile, url: string): Promise<number> {
  let have = 0;
  try {
    have = (await stat(partial)).size;
    const m = JSON.parse(await readFile(metaPath(partial), "utf8")) as PartialMeta;
    if (m.url !== url || m.size !== remote.size || m.sha256 !== remote.sha256 || m.etag !== remote.etag)
      have = 0;
  } catch {
    have = 0;
  }
  if (remote.size !== undefined && have > remote.size) have = 0;
  if (have === 0) await rm(partial, { force: true });
  return have;
}

class Retryable extends Error {}

/** One attempt: appends from `from` to the partial file; resolves when the body has ended. */
async function attempt(remote: RemoteFile, partial: string, from: number, o: DownloadOptions): Promise<void> {
  const ctl = new AbortController();
  const stallMs = o.stallMs ?? 60000;
  let timer = setTimeout(() => ctl.abort(), stallMs);
  const rearm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => ctl.abort(), stallMs);
  };
  let res: Response;
  try {
    res = await fetch(remote.location, {
      headers: headers(o.token, from > 0 ? { range: `bytes=${from}-` } : {}),
      signal: ctl.signal,
    });
  } catch (e) {
    clearTimeout(timer);
    throw new Retryable(`cannot reach ${remote.location}: ${(e as Error).cause ?? (e as Error).message}`);
  }
  let offset = from;
  if (from > 0 && res.status === 206) {
    const m = /^bytes (\d+)-/.exec(res.headers.get("content-range") ?? "");
    if (!m || Number(m[1]) !== from) {
      clearTimeout(timer);
      throw new HubError(
        "DOWNLOAD_FAILED",
        `${remote.location} answered a range that does not start at byte ${from}`,
      );
    }
  } else if (res.status === 200) {
    offset = 0; // the server sent the whole file
  } else {
    clearTimeout(timer);
    if (res.status >= 500 || res.status === 429)
      throw new Retryable(`${remote.location} answered ${res.status}`);
    throw httpError(remote.location, res.status, "downloading");
  }
  const fh = await open(partial, offset === 0 ? "w" : "a");
  let done = offset;
  try {
    if (!res.body) throw new Retryable(`${remote.location}: no body`);
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      rearm();
      await fh.write(chunk);
      done += chunk.byteLength;
      if (remote.size !== undefined && done > remote.size)
        throw new HubError(
          "DOWNLOAD_FAILED",
          `${remote.location} sent more than the ${remote.size} bytes it announced`,
        );
      o.onProgress?.(done, remote.size ?? 0);
    }
  } catch (e) {
    if (e instanceof HubError) throw e;
    throw new Retryable(
      `the connection broke at byte ${done}${remote.size ? ` of ${remote.size}` : ""}: ${(e as Error).cause ?? (e as Error).message}`,
    );
  } finally {
    clearTimeout(timer);
    await fh.close();
  }
  if (remote.size !== undefined && done < remote.size)
    throw new Retryable(`the connection ended at byte ${done} of ${remote.size}`);
}

/**
 * Downloads `url` (a resolve URL) to `dest`: resumes `dest`.partial when it holds the start of the
 * same file, retries a broken connection from where it stopped, checks the size and the sha256
 * (refusing a mismatch, and deleting the bad bytes), then renames it into place and writes dest.json.
 */
export async function downloadFile(
  url: string,
  dest: string,
  refText: string,
  revision: string,
  o: DownloadOptions = {},
): Promise<CachedMeta> {
  const remote = await describeRemote(url, o.token);
  o.onStart?.(refText, remote.size ?? 0);
  await mkdir(dirname(dest), { recursive: true });
  const partial = partialPath(dest);
  const attempts = Math.max(1, o.attempts ?? 4);
  let delay = o.retryDelayMs ?? 500;
  for (let i = 1; ; i++) {
    const from = await resumable(partial, remote, url);
    if (from > 0) o.onNote?.(`resuming ${refText} at byte ${from}${remote.size ? ` of ${remote.size}` : ""}`);
    await writeFile(
      metaPath(partial),
      JSON.stringify({ url, size: remote.size, sha256: remote.sha256, etag: remote.etag }),
    );
    try {
      if (remote.size === undefined || from < remote.size) await attempt(remote, partial, from, o);
      break;
    } catch (e) {
      if (!(e instanceof Retryable)) throw e;
      if (i >= attempts)
        throw new HubError(
          "DOWNLOAD_FAILED",
          `${refText}: ${e.message}; ${i} attempts (run the pull again to resume)`,
        );
      o.onNote?.(`${e.message}; retrying in ${delay} ms`);
      await new Promise((r) => setTimeout(r, delay));
      delay *= 2;
    }
  }
  const size = (await stat(partial)).size;
  if (remote.size !== undefined && size !== remote.size)
    throw new HubError("DOWNLOAD_FAILED", `${refText}: ${size} bytes downloaded, ${remote.size} announced`);
  const hash = createHash("sha256");
  await hashFile(partial, hash);
  const actual = hash.digest("hex");
  if (remote.sha256 !== undefined && actual !== remote.sha256) {
    await rm(partial, { force: true });
    await rm(metaPath(partial), { force: true });
    throw new HubError(
      "CHECKSUM_MISMATCH",
      `${refText}: sha256 mismatch: expected ${remote.sha256}, got ${actual}; the download was deleted`,
    );
  }
  if (remote.sha256 === undefined)
    o.onNote?.(`${refText}: the server published no sha256; only the size was checked (sha256 ${actual})`);
  const meta: CachedMeta = {
    ref: refText,
    revision,
    url,
    size,
    sha256: actual,
    checked: remote.sha256 !== undefined ? "sha256" : "size",
    ...(remote.etag ? { etag: remote.etag } : {}),
    downloadedAt: new Date().toISOString(),
  };
  await rename(partial, dest);
  await rm(metaPath(partial), { force: true });
  await writeFile(metaPath(dest), JSON.stringify(meta, null, 2));
  return meta;
}
