// The chat page (webui/, built into dist/webui.html by scripts/build-webui.mjs): read once, served
// at `/` without the API key (the page asks for the key itself and sends it with its requests).
import { readFileSync } from "node:fs";

let cached: string | null | undefined;

/** The built page, or undefined when the package was not built with it. */
export function webuiHtml(): string | undefined {
  if (cached === undefined) {
    cached = null;
    // dist/index.js beside dist/webui.html; src/ (tests) beside ../dist
    for (const rel of ["./webui.html", "../dist/webui.html"]) {
      try {
        cached = readFileSync(new URL(rel, import.meta.url), "utf8");
        break;
      } catch {
        // next place
      }
    }
  }
  return cached ?? undefined;
}

/** The paths the page is served at. */
export const WEBUI_PATHS: ReadonlySet<string> = new Set(["/", "/index.html"]);

/** Headers of the page: inline script and style only, requests to this origin only. */
export const WEBUI_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-cache",
  "content-security-policy":
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
});

/** The page's answer: 200 with it, or 404 naming why there is none. */
export function webuiAnswer(enabled: boolean): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const html = enabled ? webuiHtml() : undefined;
  if (html !== undefined) return { status: 200, headers: { ...WEBUI_HEADERS }, body: html };
  const why = enabled
    ? "this build of @minfer/server has no web page (dist/webui.html: build the package)"
    : "the web page is off (--no-webui)";
  return {
    status: 404,
    headers: { "content-type": "application/json; charset=utf-8" },
    body: JSON.stringify({ error: { message: why, type: "not_found_error", param: null, code: "no_webui" } }),
  };
}
