#!/usr/bin/env node
// docs/webui.png: the chat page of `minfer serve` (the built-in model) after one exchange, in headless
// Chromium (Debian's `chromium`, or MINFER_CHROMIUM). Run after a build:
//   node scripts/webui-screenshot.mjs [OUT.png]
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(new URL("../packages/server/package.json", import.meta.url));
const { chromium } = require("playwright-core");
const out = process.argv[2] ?? "docs/webui.png";
const exe = [process.env.MINFER_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (p) => p && existsSync(p),
);
if (!exe) throw new Error("no Chromium: apt-get install chromium, or set MINFER_CHROMIUM");
const serve = spawn(
  process.execPath,
  ["packages/cli/dist/bin.js", "serve", "--port", "0", "-np", "1", "-c", "1024"],
  {
    stdio: ["ignore", "ignore", "pipe"],
  },
);
const url = await new Promise((resolve, reject) => {
  let err = "";
  serve.stderr.on("data", (d) => {
    err += d;
    const m = /serve: ready on (http:\/\/\S+)/.exec(err);
    if (m) resolve(m[1]);
  });
  serve.on("exit", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
});
const browser = await chromium.launch({ executablePath: exe, headless: true, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 640 } });
  await page.goto(`${url}/`);
  await page.click("#settings-toggle");
  for (const [id, v] of [
    ["temperature", "0.7"],
    ["max_tokens", "120"],
  ]) {
    await page.fill(`#${id}`, v);
    await page.dispatchEvent(`#${id}`, "change");
  }
  await page.fill("#input", "The jury said");
  await page.press("#input", "Enter");
  await page.locator(".message.assistant .stats").waitFor({ timeout: 60_000 });
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  serve.kill("SIGTERM");
}
