#!/usr/bin/env node
// Embedding throughput: `minfer serve --embedding` beside llama.cpp's `llama-server --embedding`
// (a binary you give) on the same GGUF, thread count, parallel sequences and batch size, each sent
// the same /v1/embeddings requests: N short texts in requests of B texts, C requests in flight.
// Texts/s = N / wall time from the first request to the last answer. Servers alternate per round
// so machine noise hits both alike; the table gives the median of the rounds.
//
//   node packages/server/bench/embed-bench.mjs --llama-server PATH [-m MODEL.gguf] [-t 2] [-n 1000]
//        [-B 32] [-C 4] [--np 8] [-b 512] [-r 3] [--type f16] [--json]
//
// Without -m: a BERT of bge-small's shapes (12 layers, 384 wide, 12 heads, random weights of
// --type: f16, f32, q8_0, …) with the fixtures' bge WordPiece vocabulary, written into a
// temporary folder.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer as netServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const argv = process.argv.slice(2);
const take = (flag, dflt) => {
  const i = argv.indexOf(flag);
  if (i < 0) return dflt;
  const v = argv[i + 1];
  if (v === undefined) throw new Error(`${flag} needs a value`);
  argv.splice(i, 2);
  return v;
};
const int = (flag, dflt) => {
  const v = Number(take(flag, String(dflt)));
  if (!Number.isInteger(v) || v < 1) throw new Error(`${flag} needs a positive integer`);
  return v;
};
const llamaBin = take("--llama-server");
let model = take("-m");
const threads = int("-t", 2);
const nTexts = int("-n", 1000);
const perRequest = int("-B", 32);
const inFlight = int("-C", 4);
const np = int("--np", 8);
const batch = int("-b", 512);
const rounds = int("-r", 3);
const weightType = take("--type", "f16");
const json = argv.includes("--json");
if (!llamaBin) throw new Error("give --llama-server PATH (llama.cpp's llama-server, built for the CPU)");

const tmp = mkdtempSync(join(tmpdir(), "minfer-embed-bench-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));

async function bgeSmall(path) {
  const imp = (p) => import(pathToFileURL(join(root, p)).href);
  const gguf = await imp("packages/gguf/dist/index.js");
  const models = await imp("packages/models/dist/index.js");
  const fixtures = process.env.MINFER_FIXTURES ?? join(root, "..", "shared", "fixtures");
  const vocab = (await gguf.readGguf(join(fixtures, "vocab/ggml-vocab-bert-bge.gguf"))).metadata;
  const shape = {
    nLayer: 12,
    nEmbd: 384,
    nHead: 12,
    nHeadKv: 12,
    nFf: 1536,
    contextLength: 512,
    ropeFreqBase: 10000,
    rmsEps: 1e-12,
  };
  const layout = models.synthLayout("bert", shape, gguf.synthVocabSize(vocab), "bge-small shapes");
  const m = gguf.synthesizeLayout(layout, { type: weightType, seed: 1, vocab });
  await gguf.writeGguf(path, m.metadata, m.tensors);
}

/** Short texts of 4–20 words (about 6–25 tokens), different from each other. */
function texts(n) {
  const words =
    "the a of to and in is it you that he was for on are with as his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find".split(
      " ",
    );
  let s = 12345;
  const r = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 4294967296;
  };
  return Array.from({ length: n }, (_, i) => {
    const k = 4 + Math.floor(r() * 17);
    return `${Array.from({ length: k }, () => words[Math.floor(r() * words.length)]).join(" ")} ${i}`;
  });
}

function freePort() {
  return new Promise((res) => {
    const s = netServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => res(p));
    });
  });
}

async function start(kind, port) {
  const args =
    kind === "minfer"
      ? [
          join(root, "packages/cli/dist/bin.js"),
          "serve",
          "-m",
          model,
          "--embedding",
          "-t",
          String(threads),
          "-np",
          String(np),
          "-b",
          String(batch),
          "-c",
          String(Math.max(batch, 512)),
          "--port",
          String(port),
        ]
      : [
          "-m",
          model,
          "--embedding",
          "-t",
          String(threads),
          "-tb",
          String(threads),
          "-np",
          String(np),
          "-b",
          String(batch),
          "-ub",
          String(batch),
          "-c",
          String(np * 512),
          "--port",
          String(port),
          "--no-webui",
        ];
  const child = spawn(kind === "minfer" ? process.execPath : llamaBin, args, {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr.on("data", (d) => {
    err = (err + d).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${kind} exited: ${err}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) return { child, url };
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${kind} did not come up: ${err}`);
}

async function run(url, all) {
  const chunks = [];
  for (let i = 0; i < all.length; i += perRequest) chunks.push(all.slice(i, i + perRequest));
  let next = 0;
  let dims = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < chunks.length) {
        const c = chunks[next++];
        const r = await fetch(`${url}/v1/embeddings`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input: c }),
        });
        const body = await r.json();
        if (!r.ok || body.data?.length !== c.length)
          throw new Error(`bad answer: ${JSON.stringify(body).slice(0, 300)}`);
        dims = body.data[0].embedding.length;
      }
    }),
  );
  return { seconds: (performance.now() - t0) / 1000, dims };
}

if (!model) {
  model = join(tmp, "bge-small-shapes.gguf");
  await bgeSmall(model);
}
const all = texts(nTexts);
const figures = { minfer: [], llama: [] };
const servers = {};
for (const kind of ["minfer", "llama"]) servers[kind] = await start(kind, await freePort());
try {
  // warm-up: one request each
  for (const kind of ["minfer", "llama"]) await run(servers[kind].url, all.slice(0, perRequest));
  for (let r = 0; r < rounds; r++)
    for (const kind of r % 2 === 0 ? ["minfer", "llama"] : ["llama", "minfer"]) {
      const { seconds } = await run(servers[kind].url, all);
      figures[kind].push(nTexts / seconds);
    }
} finally {
  for (const s of Object.values(servers)) s.child.kill("SIGTERM");
}
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
if (json) console.log(JSON.stringify({ model, threads, nTexts, perRequest, inFlight, np, batch, figures }));
else {
  console.log(
    `${nTexts} texts, ${perRequest} a request, ${inFlight} in flight; -t ${threads} -np ${np} -b ${batch}; ${model}`,
  );
  console.log(`| engine | texts/s (median of ${rounds}) | rounds |`);
  console.log("| --- | ---: | --- |");
  for (const k of ["minfer", "llama"])
    console.log(
      `| ${k === "llama" ? "llama-server" : "minfer serve"} | ${median(figures[k]).toFixed(1)} | ${figures[k].map((x) => x.toFixed(1)).join(", ")} |`,
    );
  console.log(`minfer / llama.cpp: ${(median(figures.minfer) / median(figures.llama)).toFixed(2)}×`);
}
