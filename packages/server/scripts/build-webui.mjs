#!/usr/bin/env node
// Builds the chat page (webui/) into one self-contained file, dist/webui.html: webui/app.ts bundled
// with its dependencies by esbuild and inlined with webui/style.css into webui/index.html. Nothing
// is fetched by the page from elsewhere at run time.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const web = join(root, "webui");
const out = await build({
  entryPoints: [join(web, "app.ts")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  write: false,
  legalComments: "eof",
});
// (a "</script" inside the code would end the inline script early)
const script = out.outputFiles[0].text.replace(/<\/script/gi, "<\\/script");
const style = readFileSync(join(web, "style.css"), "utf8");
const html = readFileSync(join(web, "index.html"), "utf8")
  .replace("/*STYLE*/", () => style)
  .replace("/*SCRIPT*/", () => script);
mkdirSync(join(root, "dist"), { recursive: true });
writeFileSync(join(root, "dist", "webui.html"), html);
console.log(`webui: dist/webui.html (${(html.length / 1024).toFixed(0)} KiB)`);
