// Mutated requests for the serve fuzz: valid requests of every route, then one to three mutations
// each — a field set to a hostile value, removed or added; an array grown; the JSON text cut,
// flipped or given out-of-range numbers; the method, path or content type changed.

export interface FuzzRequest {
  readonly method: string;
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: string | undefined;
  /** What was done to the seed, to replay a failure. */
  readonly what: string;
}

/** The largest body the fuzz sends. */
const MAX_BODY = 12 * 1024 * 1024;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

/** Valid requests, one per feature of each route. */
export const SEEDS: readonly { method: string; path: string; body?: Json }[] = [
  {
    method: "POST",
    path: "/v1/completions",
    body: {
      model: "m",
      prompt: "Once upon a time",
      max_tokens: 8,
      temperature: 0.8,
      top_p: 0.9,
      top_k: 40,
      min_p: 0.05,
      seed: 1,
      stop: ["."],
      presence_penalty: 0.1,
      frequency_penalty: 0.1,
      repeat_penalty: 1.1,
      logit_bias: { "2": -5 },
      n: 2,
      logprobs: 2,
      user: "u",
      cache_prompt: true,
    },
  },
  {
    method: "POST",
    path: "/v1/completions",
    body: { prompt: ["Lily"], max_tokens: 6, stream: true, stream_options: { include_usage: true } },
  },
  {
    method: "POST",
    path: "/v1/completions",
    body: { prompt: "Yes or no?", grammar: 'root ::= "yes" | "no"' },
  },
  {
    method: "POST",
    path: "/v1/completions",
    body: {
      prompt: "A person:",
      max_tokens: 12,
      response_format: {
        type: "json_schema",
        json_schema: { name: "p", schema: { type: "object", properties: { name: { type: "string" } } } },
      },
    },
  },
  {
    method: "POST",
    path: "/v1/chat/completions",
    body: {
      model: "m",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Tell me a story." }] },
      ],
      max_tokens: 8,
      logprobs: true,
      top_logprobs: 2,
      chat_template_kwargs: { enable_thinking: false },
    },
  },
  {
    method: "POST",
    path: "/v1/chat/completions",
    body: {
      messages: [
        { role: "user", content: "Weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: "tool", tool_call_id: "c1", content: "sunny" },
      ],
      tools: [TOOL],
      tool_choice: "auto",
      parallel_tool_calls: true,
      max_tokens: 8,
      stream: true,
    },
  },
  {
    method: "POST",
    path: "/v1/chat/completions",
    body: {
      messages: [{ role: "user", content: "Weather?" }],
      tools: [TOOL],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      max_tokens: 24,
    },
  },
  {
    method: "POST",
    path: "/v1/chat/completions",
    body: {
      messages: [{ role: "developer", content: "x" }],
      response_format: { type: "json_object" },
      max_tokens: 8,
    },
  },
  {
    method: "POST",
    path: "/tokenize",
    body: { content: "Hello <|im_start|> world", add_special: true, parse_special: true, with_pieces: true },
  },
  { method: "POST", path: "/detokenize", body: { tokens: [1, 403, 407, 261] } },
  { method: "POST", path: "/apply-template", body: { messages: [{ role: "user", content: "hi" }] } },
  // llama-server's own API: its completion shape and sampler fields, slots, the prompt's size.
  {
    method: "POST",
    path: "/completion",
    body: {
      prompt: [1, "Once upon", [403, 407]],
      n_predict: 6,
      n_probs: 2,
      post_sampling_probs: true,
      samplers: ["top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"],
      typical_p: 0.9,
      xtc_probability: 0.5,
      xtc_threshold: 0.1,
      dry_multiplier: 0.8,
      dry_base: 1.75,
      dry_allowed_length: 2,
      dry_sequence_breakers: ["\n", ":"],
      top_n_sigma: 1.5,
      dynatemp_range: 0.3,
      min_keep: 1,
      repeat_last_n: 32,
      ignore_eos: true,
      id_slot: 0,
      cache_prompt: true,
      return_tokens: true,
      timings_per_token: true,
      response_fields: ["content", "timings/predicted_n"],
    },
  },
  {
    method: "POST",
    path: "/completion",
    body: {
      prompt: ["Lily", "Tom"],
      n_predict: 4,
      mirostat: 2,
      mirostat_tau: 5,
      mirostat_eta: 0.1,
      stream: true,
      return_progress: true,
      json_schema: { type: "object", properties: { a: { type: "integer" } } },
    },
  },
  {
    method: "POST",
    path: "/chat/completions",
    body: {
      messages: [
        { role: "user", content: "Tell me a story." },
        { role: "assistant", content: "Once upon" },
      ],
      continue_final_message: true,
      add_generation_prompt: false,
      n_predict: 6,
      top_k: 1,
    },
  },
  {
    method: "POST",
    path: "/chat/completions/input_tokens",
    body: { messages: [{ role: "user", content: "How many tokens?" }] },
  },
  { method: "POST", path: "/slots/0?action=save", body: { filename: "fuzz.bin" } },
  { method: "POST", path: "/slots/1?action=restore", body: { filename: "fuzz.bin" } },
  { method: "POST", path: "/slots/1?action=erase" },
  { method: "GET", path: "/v1/models/stories260K" },
  { method: "GET", path: "/v1/models" },
  { method: "GET", path: "/props" },
  { method: "GET", path: "/slots" },
  { method: "GET", path: "/metrics" },
  { method: "GET", path: "/health" },
];

function deep(n: number, leaf: Json): Json {
  let v = leaf;
  for (let i = 0; i < n; i++) v = i % 2 ? { a: v } : [v];
  return v;
}

/** Values a field is set to. */
function hostileValue(rnd: () => number): Json {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const scalars: Json[] = [
    null,
    true,
    false,
    0,
    -1,
    1,
    0.5,
    -0.5,
    2 ** 31,
    2 ** 32,
    2 ** 53,
    -(2 ** 53),
    1e308,
    -1e308,
    5e-324,
    "",
    "a",
    "\u0000",
    "\ud800",
    "\udfff\ud800",
    "🙂".repeat(50),
    "<|im_start|>assistant\n",
    "<s></s><unk>",
    "{{ 7 * 7 }}{% for x in range(99999999) %}x{% endfor %}",
    "root ::= root",
    "-1",
    "NaN",
  ];
  switch (Math.floor(rnd() * 8)) {
    case 0:
      return "x".repeat(Math.floor(rnd() * 100_000));
    case 1:
      return deep(1 + Math.floor(rnd() * 80), pick(scalars));
    case 2:
      return Array.from({ length: Math.floor(rnd() * 3000) }, (_, i) => (rnd() < 0.5 ? i : pick(scalars)));
    case 3:
      return Object.fromEntries(
        Array.from({ length: Math.floor(rnd() * 50) }, (_, i) => [`k${i}`, pick(scalars)]),
      );
    case 4:
      return [pick(scalars), pick(scalars)];
    case 5:
      // Own keys named __proto__ and constructor, as JSON.parse makes them.
      return JSON.parse(
        '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}',
      ) as Json;
    default:
      return pick(scalars);
  }
}

const UNKNOWN_KEYS = [
  "suffix",
  "best_of",
  "functions",
  "echo",
  "__proto__",
  "constructor",
  "x".repeat(5000),
  "",
  "n_probs",
];

/** The containers and keys inside `v`, to pick one to mutate. */
function paths(
  v: Json,
  at: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  out.push(at);
  if (Array.isArray(v)) for (let i = 0; i < v.length; i++) paths(v[i]!, [...at, i], out);
  else if (v !== null && typeof v === "object") for (const k of Object.keys(v)) paths(v[k]!, [...at, k], out);
  return out;
}

function setPath(root: Json, path: (string | number)[], value: Json | undefined): Json {
  if (path.length === 0) return value ?? null;
  let o = root as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) o = o[k] as Record<string | number, Json>;
  const last = path.at(-1)!;
  if (value === undefined) {
    if (Array.isArray(o)) o.splice(Number(last), 1);
    else delete o[last];
  } else o[last] = value;
  return root;
}

function mutateJson(v: Json, rnd: () => number, what: string[]): Json {
  const all = paths(v);
  const p = all[Math.floor(rnd() * all.length)]!;
  const r = rnd();
  if (r < 0.5) {
    what.push(`set ${p.join(".")}`);
    return setPath(v, p, hostileValue(rnd));
  }
  if (r < 0.65 && p.length > 0) {
    what.push(`delete ${p.join(".")}`);
    return setPath(v, p, undefined);
  }
  if (r < 0.8 && v !== null && typeof v === "object" && !Array.isArray(v)) {
    const k = UNKNOWN_KEYS[Math.floor(rnd() * UNKNOWN_KEYS.length)]!;
    what.push(`add ${k.slice(0, 20)}`);
    (v as Record<string, Json>)[k] = hostileValue(rnd);
    return v;
  }
  // Grow an array in place (messages, tools, stop, tokens, …).
  const arrays = all.filter((q) => {
    let x: Json = v;
    for (const k of q) x = (x as Record<string | number, Json>)[k]!;
    return Array.isArray(x) && x.length > 0;
  });
  if (arrays.length === 0) return v;
  const q = arrays[Math.floor(rnd() * arrays.length)]!;
  let arr: Json = v;
  for (const k of q) arr = (arr as Record<string | number, Json>)[k]!;
  const times = 1 + Math.floor(rnd() * 200);
  what.push(`grow ${q.join(".")} x${times}`);
  const a = arr as Json[];
  const copy = [...a];
  for (let i = 0; i < times; i++) a.push(...(JSON.parse(JSON.stringify(copy)) as Json[]));
  return v;
}

function mutateText(text: string, rnd: () => number, what: string[]): string {
  const r = rnd();
  const at = Math.floor(rnd() * text.length);
  if (r < 0.25) {
    what.push(`cut at ${at}`);
    return text.slice(0, at);
  }
  if (r < 0.5) {
    what.push(`flip at ${at}`);
    return text.slice(0, at) + String.fromCharCode(Math.floor(rnd() * 128)) + text.slice(at + 1);
  }
  if (r < 0.75) {
    const n = [
      "1e400",
      "-1e400",
      "-0",
      "1".repeat(400),
      "0.0000000000000000000001",
      "NaN",
      "Infinity",
      "0x10",
    ][Math.floor(rnd() * 8)]!;
    what.push(`number ${n.slice(0, 10)}`);
    return text.replace(/-?\d+(\.\d+)?/, n);
  }
  what.push("invalid utf-8");
  return `${text.slice(0, at)}\u00ff\u00fe${text.slice(at)}`;
}

/** The `i`-th mutated request of a run seeded with `rnd`. */
export function mutatedRequest(rnd: () => number): FuzzRequest {
  const seed = SEEDS[Math.floor(rnd() * SEEDS.length)]!;
  const what: string[] = [`${seed.method} ${seed.path}`];
  let method = seed.method;
  let path = seed.path;
  let contentType: string | undefined = seed.body !== undefined ? "application/json" : undefined;
  let body: Json | undefined =
    seed.body !== undefined ? (JSON.parse(JSON.stringify(seed.body)) as Json) : undefined;
  const n = 1 + Math.floor(rnd() * 3);
  for (let k = 0; k < n && body !== undefined; k++) body = mutateJson(body, rnd, what);
  let text = body !== undefined ? JSON.stringify(body) : undefined;
  // Grown past what any client would send (the server's bound is 8 MB): cut, which makes it bad JSON.
  if (text !== undefined && text.length > MAX_BODY) {
    text = text.slice(0, MAX_BODY);
    what.push("cut to 12 MB");
  }
  const r = rnd();
  if (text !== undefined && r < 0.15) text = mutateText(text, rnd, what);
  else if (r < 0.2) {
    method = ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "POST"][Math.floor(rnd() * 7)]!;
    what.push(`method ${method}`);
  } else if (r < 0.25) {
    path = [
      `${path}/`,
      `${path}?x=%zz`,
      path.toUpperCase(),
      `${path}/../x`,
      `/v1/../v1${path}`,
      `${path}%00`,
      // (a slot id out of range or not a number; a slot action unknown or given twice)
      path.replace(
        /\/slots\/\d+/,
        `/slots/${["99", "-1", "1e3", "x", "", "4294967296"][Math.floor(rnd() * 6)]}`,
      ),
      path.replace(
        /action=\w+/,
        ["action=evil", "action=save&action=erase", "action=", "x=1"][Math.floor(rnd() * 4)]!,
      ),
    ][Math.floor(rnd() * 8)]!;
    what.push(`path ${path}`);
  } else if (r < 0.3) {
    contentType = [
      undefined,
      "text/plain",
      "application/json; charset=utf-16",
      "multipart/form-data",
      "application/x-www-form-urlencoded",
    ][Math.floor(rnd() * 5)];
    what.push(`content-type ${contentType}`);
  }
  if (method === "GET" || method === "HEAD") text = undefined;
  return { method, path, contentType, body: text, what: what.join("; ") };
}

/** The request as bytes on the wire, asking the server to close the connection after answering. */
export function wire(r: FuzzRequest): Buffer {
  const body =
    r.body !== undefined
      ? Buffer.from(r.body, r.what.includes("invalid utf-8") ? "latin1" : "utf8")
      : undefined;
  const head = [
    `${r.method} ${r.path} HTTP/1.1`,
    "host: 127.0.0.1",
    "connection: close",
    ...(r.contentType !== undefined && body ? [`content-type: ${r.contentType}`] : []),
    ...(body ? [`content-length: ${body.length}`] : []),
  ];
  return Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`), ...(body ? [body] : [])]);
}
