// Puts a freshly built addon in place without writing into the old one: a copy beside `dest`,
// then a rename over it. Every running process that loaded the old addon keeps mapping the old
// file (its inode), untouched. copyFileSync(src, dest) over an existing dest instead truncates and
// rewrites that same inode, so in a process that has it loaded the addon's code pages change
// under it: a `minfer` run on this machine during a rebuild then crashed (SIGSEGV or SIGBUS) at
// exit, when Node-API's environment teardown calls the addon's finalizers from the new bytes.
import { copyFileSync, renameSync, rmSync } from "node:fs";

export function replaceFile(src, dest) {
  const tmp = `${dest}.${process.pid}.tmp`;
  try {
    copyFileSync(src, tmp);
    renameSync(tmp, dest);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
