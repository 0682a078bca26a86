#!/usr/bin/env node
import { main } from "./main.js";

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  // A defect, not a user error: say so, with the stack, and fail.
  process.stderr.write(`minfer: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exitCode = 1;
}
