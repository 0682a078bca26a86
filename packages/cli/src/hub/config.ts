// Where models are fetched from and kept: read once from the environment, passed down.
import { homedir } from "node:os";
import { join } from "node:path";
import { HubError } from "./hub-error.js";

export interface HubConfig {
  /** The hub's base URL (no trailing slash): MINFER_HF_ENDPOINT, else HF_ENDPOINT, else https://huggingface.co. */
  readonly endpoint: string;
  /** The cache directory: MINFER_CACHE_DIR, else $XDG_CACHE_HOME/minfer, else ~/.cache/minfer. */
  readonly cacheDir: string;
  /** A bearer token for gated or private repositories: HF_TOKEN (unset: none). */
  readonly token?: string;
}

export function hubConfig(env: NodeJS.ProcessEnv = process.env): HubConfig {
  const raw = env.MINFER_HF_ENDPOINT || env.HF_ENDPOINT || "https://huggingface.co";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new HubError("INVALID_ARGUMENT", `the hub endpoint ${JSON.stringify(raw)} is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new HubError("INVALID_ARGUMENT", `the hub endpoint ${JSON.stringify(raw)} is not an http(s) URL`);
  const cacheDir = env.MINFER_CACHE_DIR || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "minfer");
  return { endpoint: raw.replace(/\/+$/, ""), cacheDir, ...(env.HF_TOKEN ? { token: env.HF_TOKEN } : {}) };
}
