/**
 * Which native binary the package loads, in order: the sanitizer build (MINFER_SANITIZE=address,
 * and then only it), this package's own build/ (built from source: a checkout's `npm run build`,
 * or an install that compiled), then this platform's prebuilt package. None: the reason recorded
 * at install (build/NATIVE_UNAVAILABLE.txt) or why nothing was found, with the fix.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, FIX, findPrebuilt, type Prebuilt } from "../scripts/prebuilt.mjs";

/** Where a binary came from, as diagnostics() says it. */
export type BinaryOrigin = "sanitizer build" | "built from source" | "prebuilt";

export type BinaryChoice =
  | { readonly ok: true; readonly path: string; readonly origin: BinaryOrigin; readonly from?: string }
  | { readonly ok: false; readonly reason: string };

/** What the selection looks at; each part is injectable so a test can make every case happen. */
export interface BinaryLookup {
  /** The package root (build/ sits below it). */
  readonly packageRoot: string;
  /** MINFER_SANITIZE=address (config.ts). */
  readonly sanitize: boolean;
  /** This platform's prebuilt binary (default: scripts/prebuilt.mjs findPrebuilt). */
  readonly prebuilt?: () => Prebuilt;
  readonly exists?: (path: string) => boolean;
  readonly readText?: (path: string) => string;
}

/** Picks the binary to load (nothing is loaded here). */
export function selectBinary(lookup: BinaryLookup): BinaryChoice {
  const exists = lookup.exists ?? existsSync;
  const readText = lookup.readText ?? ((p: string) => readFileSync(p, "utf8"));
  const build = join(lookup.packageRoot, "build");
  if (lookup.sanitize) {
    const debug = join(build, "Debug", BINARY);
    if (exists(debug)) return { ok: true, path: debug, origin: "sanitizer build" };
    return {
      ok: false,
      reason:
        `MINFER_SANITIZE=address asks for the sanitizer build ${debug}, which is absent: build it with ` +
        "`MINFER_SANITIZE=address node scripts/build-native.mjs` in the package (README, Sanitizers)",
    };
  }
  const own = join(build, "Release", BINARY);
  if (exists(own)) return { ok: true, path: own, origin: "built from source" };
  const prebuilt = (lookup.prebuilt ?? (() => findPrebuilt(lookup.packageRoot)))();
  if (prebuilt.path !== undefined)
    return { ok: true, path: prebuilt.path, origin: "prebuilt", from: prebuilt.name };
  const note = join(build, "NATIVE_UNAVAILABLE.txt");
  if (exists(note)) {
    const recorded = readText(note).trim();
    return {
      ok: false,
      reason: recorded.includes("no prebuilt") ? recorded : `${recorded} (no prebuilt: ${prebuilt.missing})`,
    };
  }
  return {
    ok: false,
    reason:
      `no native addon: ${own} was not built (the package's install script did not run; pnpm runs a` +
      ` dependency's install script only when allowed, see pnpm approve-builds) and no prebuilt:` +
      ` ${prebuilt.missing}. Fix: ${FIX}, or run \`npm run build:native\` in ${lookup.packageRoot}.`,
  };
}
