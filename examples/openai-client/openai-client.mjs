// The official `openai` client against `minfer serve`.
//
//   node openai-client.mjs                 start `minfer serve` (the built-in model) and talk to it
//   node openai-client.mjs -m model.gguf   the same with your model
//   node openai-client.mjs --url URL       talk to a server already running (e.g. http://127.0.0.1:8080)
//   node openai-client.mjs --check         also check what comes back (used by the tests)
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import OpenAI from "openai";

const args = process.argv.slice(2);
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const check = args.includes("--check");
const fail = (message) => {
  throw new Error(`check failed: ${message}`);
};

/** Starts `minfer serve` on a free port; resolves with its URL once it reports ready. */
function startServer() {
  // The `minfer` package's command (its package.json names it), run with this Node.
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("minfer/package.json");
  const bin = join(dirname(pkg), require(pkg).bin.minfer);
  const model = flag("-m");
  const proc = spawn(
    process.execPath,
    [bin, "serve", "--port", "0", "-np", "4", ...(model ? ["-m", model] : [])],
    {
      stdio: ["ignore", "inherit", "pipe"],
    },
  );
  return new Promise((resolve, reject) => {
    let err = "";
    proc.stderr.on("data", (d) => {
      err += d;
      process.stderr.write(d);
      const m = /serve: ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1], stop: () => proc.kill("SIGTERM") });
    });
    proc.on("error", reject);
    proc.on("exit", (code) => reject(new Error(`minfer serve exited with ${code}`)));
  });
}

const server = flag("--url") ? { url: flag("--url"), stop() {} } : await startServer();
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: process.env.OPENAI_API_KEY ?? "none" });
try {
  const [{ id: model }] = (await client.models.list()).data;
  const messages = [{ role: "user", content: "Tell me about the city." }];

  // 1. One answer.
  const answer = await client.chat.completions.create({ model, messages, max_tokens: 40, temperature: 0 });
  console.log(`\n[chat] ${answer.choices[0].message.content}`);
  console.log(`[usage] ${JSON.stringify(answer.usage)}`);

  // 2. The same, streamed: the text arrives piece by piece and is the same text.
  process.stdout.write("[stream] ");
  let streamed = "";
  const stream = await client.chat.completions.create({
    model,
    messages,
    max_tokens: 40,
    temperature: 0,
    stream: true,
  });
  for await (const chunk of stream) {
    const piece = chunk.choices[0]?.delta?.content ?? "";
    streamed += piece;
    process.stdout.write(piece);
  }
  console.log();
  if (check && streamed !== answer.choices[0].message.content) fail("the stream differs from the answer");

  // 3. Four requests at once: the server decodes them together, one batch per step.
  const prompts = ["The jury said", "The city was", "In the morning", "He told her"];
  const t0 = performance.now();
  const together = await Promise.all(
    prompts.map((prompt) => client.completions.create({ model, prompt, max_tokens: 32, temperature: 0 })),
  );
  const ms = performance.now() - t0;
  const tokens = together.reduce((n, r) => n + r.usage.completion_tokens, 0);
  for (const [i, r] of together.entries()) console.log(`[batch ${i}] ${prompts[i]}${r.choices[0].text}`);
  console.log(
    `[batch] ${tokens} tokens in ${ms.toFixed(0)} ms (${((tokens / ms) * 1000).toFixed(0)} tok/s together)`,
  );

  // 4. JSON that follows a schema (enforced by a grammar while sampling).
  const schema = {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 16 },
      year: { type: "integer", minimum: 1900, maximum: 2000 },
    },
    required: ["name", "year"],
    additionalProperties: false,
  };
  const json = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Name a person and a year." }],
    max_tokens: 60,
    temperature: 0,
    response_format: { type: "json_schema", json_schema: { name: "person", schema } },
  });
  const value = JSON.parse(json.choices[0].message.content);
  console.log(`[json] ${JSON.stringify(value)}`);
  if (check && (typeof value.name !== "string" || !Number.isInteger(value.year)))
    fail("the JSON misses a field");

  // 5. Bad input gets a clear error, not a crash.
  const err = await client.chat.completions.create({ model, messages, temperature: "hot" }).catch((e) => e);
  console.log(`[error] ${err.status} ${err.error?.param}: ${err.message}`);
  if (check && (err.status !== 400 || err.error?.param !== "temperature"))
    fail("a bad temperature was not a 400");
} finally {
  server.stop();
}
