#!/usr/bin/env node
// Stands in for the `llama-server` binary that llama.cpp's server tests start. It replaces the
// Hugging Face model the test names with the local fixture of the same model, and then either
// translates llama-server's flags into `minfer serve`'s (LLAMA_TESTS_TARGET=minfer, the default)
// or runs a real llama-server with the same local model (LLAMA_TESTS_TARGET=llama,
// LLAMA_SERVER_REAL=/path/to/llama-server), so both engines meet the same tests on the same files.
// A model or flag with no local counterpart is not dropped silently: the shim exits naming it,
// and the test that needed it fails.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readShimModels } from "./local-models.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "../..");
const fixtures = resolve(process.env.MINFER_FIXTURES ?? join(repo, "../shared/fixtures"));

/** The test suite's Hugging Face models that exist among the local fixtures. */
const LOCAL_MODELS = new Map([
  ["ggml-org/test-model-stories260K", "models/stories260K.gguf"],
  ["ggml-org/models/tinyllamas/stories260K.gguf", "models/stories260K.gguf"],
]);

function fail(message) {
  process.stderr.write(`llama-server shim: ${message}\n`);
  process.exit(2);
}

/** llama-server's argv, as the tests write it: `--flag value` pairs and bare switches. */
function parse(argv) {
  const SWITCHES = new Set([
    "--offline",
    "--cont-batching",
    "--embedding",
    "--reranking",
    "--metrics",
    "--kv-unified",
    "--swa-full",
    "--slots",
    "--no-slots",
    "--verbose",
    "--context-shift",
    "--no-ui",
    "--no-models-autoload",
    "--jinja",
    "--no-jinja",
    "--no-mmproj",
    "--no-cache-idle-slots",
    "--ui-mcp-proxy",
    "--backend_sampling",
  ]);
  const out = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (SWITCHES.has(flag)) out.push([flag, undefined]);
    else if (flag.startsWith("-") && i + 1 < argv.length) out.push([flag, argv[++i]]);
    else fail(`cannot read the argument ${JSON.stringify(flag)}`);
  }
  return out;
}

function localModel(pairs) {
  const value = (f) => pairs.find(([k]) => k === f)?.[1];
  const file = value("--model");
  if (file !== undefined) return file;
  const repoName = value("--hf-repo");
  if (repoName === undefined) fail("no model: neither --model nor --hf-repo");
  const key = value("--hf-file") === undefined ? repoName : `${repoName}/${value("--hf-file")}`;
  const made = readShimModels(process.env).get(key);
  if (made !== undefined) return made;
  const local = LOCAL_MODELS.get(key);
  if (local === undefined) fail(`the model ${key} has no local fixture (tests run offline)`);
  return join(fixtures, local);
}

/** A template file the test names under llama.cpp's models/templates, found among the fixtures. */
function localTemplate(path) {
  if (existsSync(path)) return path;
  const local = join(fixtures, "templates", basename(path));
  if (!existsSync(local)) fail(`the chat template ${basename(path)} has no local fixture`);
  return local;
}

const DROP = new Set(["--hf-repo", "--hf-file", "--model", "--offline"]);

/** llama-server flag -> minfer serve flag, for flags whose meaning is the same. */
const SAME = new Map([
  ["--host", "--host"],
  ["--port", "--port"],
  ["--temp", "--temp"],
  ["--seed", "--seed"],
  ["--ctx-size", "-c"],
  ["--batch-size", "-b"],
  ["--threads", "-t"],
  ["--n-gpu-layers", "-ngl"],
  ["--parallel", "-np"],
  ["--n-predict", "-n"],
  ["--alias", "--alias"],
  ["--tags", "--tags"],
  ["--api-key", "--api-key"],
  ["--cors-origins", "--cors-origins"],
  ["--chat-template", "--chat-template"],
  ["--slot-save-path", "--slot-save-path"],
  ["--reasoning-format", "--reasoning-format"],
  ["--reasoning", "--reasoning"],
  ["--metrics", "--metrics"],
  ["--verbose", "--verbose"],
  ["--context-shift", "--context-shift"],
  ["--slots", "--slots"],
  ["--no-slots", "--no-slots"],
  ["--embedding", "--embedding"],
  ["--reranking", "--reranking"],
  ["--pooling", "--pooling"],
]);

/**
 * Flags that tune llama.cpp's own machinery and have no effect on what a client sees: minfer
 * always batches continuously, always renders templates with its Jinja engine, sizes its own
 * micro-batches, picks its attention kernel itself, and samples on the host (--backend_sampling
 * moves llama.cpp's sampling to the device; the tokens and probabilities are the same).
 */
const NO_CLIENT_EFFECT = new Set([
  "--cont-batching",
  "--jinja",
  "--no-jinja",
  "--ubatch-size",
  "-fa",
  "--backend_sampling",
]);

function toMinfer(pairs, model) {
  const args = ["serve", "-m", model];
  const kv = pairs.filter(([k]) => k === "-ctk" || k === "-ctv").map(([, v]) => v);
  if (kv.length > 0) {
    if (new Set(kv).size !== 1) fail(`-ctk and -ctv differ (${kv.join(", ")}); minfer has one --kv-type`);
    args.push("--kv-type", kv[0]);
  }
  for (const [flag, value] of pairs) {
    if (DROP.has(flag) || NO_CLIENT_EFFECT.has(flag) || flag === "-ctk" || flag === "-ctv") continue;
    if (flag === "--chat-template-file") args.push("--chat-template-file", localTemplate(value));
    else if (SAME.has(flag)) args.push(SAME.get(flag), ...(value === undefined ? [] : [value]));
    // Anything else goes through unchanged, so minfer refuses it by name and the test fails.
    else args.push(flag, ...(value === undefined ? [] : [value]));
  }
  return [process.execPath, join(repo, "packages/cli/dist/bin.js"), ...args];
}

function toLlama(pairs, model) {
  const bin = process.env.LLAMA_SERVER_REAL;
  if (!bin) fail("LLAMA_TESTS_TARGET=llama needs LLAMA_SERVER_REAL, the llama-server binary");
  const args = ["--model", model];
  for (const [flag, value] of pairs) {
    if (DROP.has(flag)) continue;
    if (flag === "--chat-template-file") args.push(flag, localTemplate(value));
    else args.push(flag, ...(value === undefined ? [] : [value]));
  }
  return [bin, ...args];
}

const pairs = parse(process.argv.slice(2));
const model = localModel(pairs);
const target = process.env.LLAMA_TESTS_TARGET ?? "minfer";
if (target !== "minfer" && target !== "llama")
  fail(`LLAMA_TESTS_TARGET must be minfer or llama, not ${target}`);
const [cmd, ...args] = target === "llama" ? toLlama(pairs, model) : toMinfer(pairs, model);
process.stderr.write(`llama-server shim (${target}): ${[cmd, ...args].join(" ")}\n`);
const child = spawn(cmd, args, { stdio: "inherit" });
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
