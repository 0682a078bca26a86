#!/usr/bin/env node
// `prepack` / `postpack`: copies the repository's native/{cuda,common} (without tests/) into this
// package's native/, so the tarball can build from source where no prebuilt binary fits, and
// removes the copy after packing. In a checkout the copy is transient (and gitignored).
//   node scripts/pack-sources.mjs copy | remove
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { copySources, packageRoot, repoNative, SOURCE_DIRS } from "./native-sources.mjs";

const action = process.argv[2];
const dest = join(packageRoot, "native");
const repo = repoNative();
if (action === "copy") {
  if (!repo) {
    if (existsSync(dest)) {
      console.log(
        `[pack-sources] no repository above ${packageRoot}: packing the sources already in native/`,
      );
      process.exit(0);
    }
    console.error(
      `[pack-sources] no sources to pack: ${packageRoot} is not in a minfer checkout and has no native/`,
    );
    process.exit(1);
  }
  copySources(repo, dest);
  console.log(`[pack-sources] copied ${repo}/{${SOURCE_DIRS.join(",")}} to ${dest} (without tests/)`);
} else if (action === "remove") {
  // Only a copy made from the repository is removed: an installed package's native/ is its only one.
  if (repo) rmSync(dest, { recursive: true, force: true });
} else {
  console.error(
    `[pack-sources] usage: node scripts/pack-sources.mjs copy | remove (got ${action ?? "nothing"})`,
  );
  process.exit(1);
}
