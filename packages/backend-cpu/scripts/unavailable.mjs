// The one message written when the addon cannot be built here: why, why no prebuilt binary was
// used, and the fix, as one line in build/NATIVE_UNAVAILABLE.txt (the loader reports it).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FIX } from "./prebuilt.mjs";

/** build/NATIVE_UNAVAILABLE.txt of the package at pkg. */
export const unavailableFile = (pkg) => join(pkg, "build", "NATIVE_UNAVAILABLE.txt");

/** The message: reason, then the prebuilt status when given, then the fix. */
export function unavailableText(reason, prebuiltStatus) {
  return (
    `[backend-cpu] native addon not built: ${reason}` +
    (prebuiltStatus ? `; no prebuilt: ${prebuiltStatus}` : "") +
    `. Fix: ${FIX}.`
  );
}

/** Writes the message to build/NATIVE_UNAVAILABLE.txt and prints it (one line). */
export function recordUnavailable(pkg, reason, prebuiltStatus) {
  const text = unavailableText(reason, prebuiltStatus);
  mkdirSync(join(pkg, "build"), { recursive: true });
  writeFileSync(unavailableFile(pkg), `${text}\n`);
  console.log(
    `${text} (recorded in ${unavailableFile(pkg)}; the backend reports score() 0 with this reason)`,
  );
}
