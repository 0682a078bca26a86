#!/usr/bin/env node
// The second half of run-arm64.sh: writes one model per weight type and runs `minfer run` on each
// twice — the x86 bundle under MINFER_CPU_SIMD=scalar, the AArch64 bundle under qemu (NEON
// detected) — and fails unless both runs generate the same token ids at the expected level.
//   node arm64-models.mjs WORK_DIR X64_BUNDLE ARM64_BUNDLE ARM64_NODE QEMU_SYSROOT [NAME,NAME…]
// Models: the built-in F16 model quantized by `minfer gguf quantize --pure` (every matrix of the
// type), and for the types minfer cannot write, the F16 model with blk.0.attn_k.weight replaced
// by llama-quantize's bytes of it (packages/gguf/src/quant/llamacpp-quants.gguf).
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const { readGguf, readTensorData, writeGguf } = await import(join(root, "packages/gguf/dist/index.js"));
const [work, x64, arm64, armNode, sysroot, names] = process.argv.slice(2);
if (!sysroot) {
  console.error(
    "usage: arm64-models.mjs WORK_DIR X64_BUNDLE ARM64_BUNDLE ARM64_NODE QEMU_SYSROOT [NAME,NAME…]",
  );
  process.exit(2);
}
const F16_MODEL = join(root, "packages/cli/models/minfer-default-7m-f16.gguf");
const LLAMACPP = join(root, "packages/gguf/src/quant/llamacpp-quants.gguf");
const TENSOR = "blk.0.attn_k.weight";
/** minfer quantize TYPE argument -> the ggml type every matrix gets. */
const QUANTIZED = {
  q4_0: "Q4_0",
  q4_1: "Q4_1",
  q5_0: "Q5_0",
  q5_1: "Q5_1",
  q8_0: "Q8_0",
  q2_k: "Q2_K",
  q3_k_m: "Q3_K",
  q4_k_m: "Q4_K",
  q5_k_m: "Q5_K",
  q6_k: "Q6_K",
  iq4_nl: "IQ4_NL",
  iq4_xs: "IQ4_XS",
  bf16: "BF16",
  f32: "F32",
};
const LLAMACPP_ONLY = "IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S TQ1_0 TQ2_0 MXFP4".split(" ");
const PROMPT = ["-p", "Once upon a time"];
const RUN = [...PROMPT, ..."-n 16 --ignore-eos --temp 0 --ids --verbose -t 2 -ngl 0".split(" ")];

const dir = join(work, "models");
mkdirSync(dir, { recursive: true });
const failures = [];
const fail = (name, why) => {
  failures.push(name);
  console.log(`FAIL ${name}: ${why}`);
};

/** Quantizes the F16 model and checks that every matrix came out as `type`. */
async function quantized(arg, type) {
  const out = join(dir, `${arg}.gguf`);
  const cli = join(x64, "dist/bin.js"); // the bundle: a snapshot, safe from rebuilds meanwhile
  const r = spawnSync(process.execPath, [cli, "gguf", "quantize", F16_MODEL, out, arg, "--pure", "-t", "2"], {
    encoding: "utf8",
  });
  if (r.status !== 0)
    throw new Error(`minfer gguf quantize ... ${arg} failed (exit ${r.status}):\n${r.stderr}`);
  const other = (await readGguf(out)).tensors.filter((t) => t.dims.length >= 2 && t.typeName !== type);
  if (other.length > 0) throw new Error(`${out}: ${other[0].name} is ${other[0].typeName}, expected ${type}`);
  return out;
}

/** The F16 model with TENSOR replaced by llama-quantize's `type` version of it. */
async function withLlamacppTensor(f16, lq, type) {
  const info = lq.tensors.find((t) => t.name === type);
  const orig = f16.tensors.find((t) => t.name === TENSOR);
  if (!info || info.typeName !== type || info.dims.join() !== orig.dims.join())
    throw new Error(`${LLAMACPP} has no ${type} tensor of ${TENSOR}'s shape [${orig.dims}]`);
  const tensors = [];
  for (const t of f16.tensors) {
    const src = t.name === TENSOR ? { file: lq, info } : { file: f16, info: t };
    tensors.push({
      name: t.name,
      type: src.info.type,
      dims: t.dims,
      data: await readTensorData(src.file, src.info),
    });
  }
  const out = join(dir, `${type.toLowerCase()}.gguf`);
  await writeGguf(out, f16.metadata.entries(), tensors);
  return out;
}

/** Runs `minfer run` on `model`; returns the ids and the "loaded" line's weight types and SIMD level. */
function run(cmd, args, env) {
  const started = Date.now();
  const r = spawnSync(cmd, [...args, ...RUN], { encoding: "utf8", env, timeout: 300_000 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const loaded = /^loaded .*, [\d.]+ [KMG]iB (\S+), cpu \d+ threads \((\w+)\)/m.exec(r.stderr ?? "");
  let ids;
  try {
    ids = JSON.parse(r.stdout);
  } catch {
    ids = undefined;
  }
  const tail = (r.stderr ?? "").trim().split("\n").slice(-8).join("\n");
  const error = r.error
    ? String(r.error)
    : r.status !== 0
      ? `exit ${r.status ?? r.signal}\n${tail}`
      : !Array.isArray(ids) || !loaded
        ? `unexpected output (stdout ${JSON.stringify(r.stdout.slice(0, 200))})\n${tail}`
        : undefined;
  return { ids, types: loaded?.[1], level: loaded?.[2], error, seconds };
}

function check(name, type, model) {
  const { MINFER_CPU_SIMD: _, ...plain } = process.env;
  const ref = run(process.execPath, [join(x64, "dist/bin.js"), "run", "-m", model], {
    ...plain,
    MINFER_CPU_SIMD: "scalar",
  });
  const qemu = (env) =>
    run("qemu-aarch64", ["-L", sysroot, armNode, join(arm64, "dist/bin.js"), "run", "-m", model], env);
  const arm = qemu(plain);
  if (ref.error) return fail(name, `x86 scalar run failed: ${ref.error}`);
  if (arm.error) return fail(name, `arm64 run under qemu failed: ${arm.error}`);
  if (ref.level !== "scalar") return fail(name, `the x86 reference ran at ${ref.level}, not scalar`);
  if (arm.level !== "neon") return fail(name, `the arm64 run chose ${arm.level}, not neon`);
  for (const r of [ref, arm])
    if (!r.types.split("+").includes(type))
      return fail(name, `loaded weights are ${r.types}, expected ${type}`);
  const ids = (r) => JSON.stringify(r.ids);
  if (ref.ids.length !== 16) return fail(name, `the x86 run generated ${ref.ids.length} tokens, not 16`);
  if (ids(ref) === ids(arm)) {
    const line = `${name.padEnd(8)} ${arm.types.padEnd(16)} neon ${arm.seconds.padStart(5)} s | x86 scalar ${ref.seconds} s`;
    return console.log(`ok   ${line} | ${ids(arm)}`);
  }
  // Which side differs: the NEON kernels from arm64's scalar ones, or the arm64 build from x86's?
  const armScalar = qemu({ ...plain, MINFER_CPU_SIMD: "scalar" });
  const why = armScalar.error
    ? `(the arm64 scalar run failed: ${armScalar.error})`
    : ids(armScalar) === ids(ref)
      ? "(arm64 scalar agrees with x86 scalar: a NEON kernel differs from its scalar kernel)"
      : ids(armScalar) === ids(arm)
        ? "(arm64 scalar agrees with arm64 neon: the arm64 build's own arithmetic differs from x86's," +
          " e.g. the compiler fusing a*b+c into FMA in baseline code; see -ffp-contract)"
        : "(all three differ)";
  fail(
    name,
    `token ids differ ${why}:\n  x86 scalar   ${ids(ref)}\n  arm64 neon   ${ids(arm)}\n  arm64 scalar ${ids(armScalar)}`,
  );
}

const f16 = await readGguf(F16_MODEL);
const lq = await readGguf(LLAMACPP);
const models = [
  ["f16", "F16", async () => F16_MODEL],
  ...Object.entries(QUANTIZED).map(([arg, type]) => [arg, type, () => quantized(arg, type)]),
  ...LLAMACPP_ONLY.map((type) => [type.toLowerCase(), type, () => withLlamacppTensor(f16, lq, type)]),
];
const only = names?.split(",") ?? models.map(([name]) => name);
const unknown = only.filter((n) => !models.some(([name]) => name === n));
if (unknown.length > 0) {
  console.error(
    `arm64-models: no model named ${unknown.join(", ")}; names: ${models.map(([n]) => n).join(" ")}`,
  );
  process.exit(2);
}
const started = Date.now();
for (const [name, type, write] of models.filter(([name]) => only.includes(name))) {
  let model;
  try {
    model = await write();
  } catch (e) {
    fail(name, `could not write the model: ${e.message}`);
    continue;
  }
  check(name, type, model);
}
const secs = Math.round((Date.now() - started) / 1000);
if (failures.length > 0) {
  console.log(
    `arm64: ${failures.length} of ${only.length} weight types FAILED (${secs} s): ${failures.join(", ")}`,
  );
  process.exit(1);
}
console.log(
  `arm64: all ${only.length} weight types ran at NEON under qemu with the x86 scalar token ids (${secs} s)`,
);
