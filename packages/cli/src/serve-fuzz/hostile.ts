// Hostile requests for the serve fuzz: what an attacker sends on purpose, by class — malformed
// HTTP, smuggling attempts, oversized and deeply nested bodies, pathological grammars and
// schemas, floods of fields. Each class makes variants from a seeded PRNG; every one is sent on
// its own connection and must be answered (an OpenAI error for a refusal), never a 5xx.

/** One hostile request: raw bytes, sent on a fresh connection. */
export interface HostileRequest {
  readonly name: string;
  readonly data: Buffer;
  /** The client hangs up after this many bytes of answer (a disconnect mid-stream): not judged. */
  readonly hangUpAfter?: number;
}

const CRLF = "\r\n";

function http(method: string, path: string, headers: string[], body?: string | Buffer): Buffer {
  const b = body === undefined ? undefined : typeof body === "string" ? Buffer.from(body) : body;
  const head = [`${method} ${path} HTTP/1.1`, "host: 127.0.0.1", "connection: close", ...headers];
  if (b && !headers.some((h) => /^(content-length|transfer-encoding):/i.test(h)))
    head.push(`content-length: ${b.length}`);
  return Buffer.concat([Buffer.from(head.join(CRLF) + CRLF + CRLF), ...(b ? [b] : [])]);
}

const json = (path: string, body: string | Buffer, extra: string[] = []) =>
  http("POST", path, ["content-type: application/json", ...extra], body);

const FIELDS = [
  "prompt",
  "max_tokens",
  "temperature",
  "stream",
  "stop",
  "logit_bias",
  "n",
  "seed",
  "grammar",
  "response_format",
  "top_p",
  "n_predict",
  "n_probs",
  "id_slot",
  "samplers",
  "json_schema",
  "dry_sequence_breakers",
];
const ROUTES = [
  "/v1/completions",
  "/v1/chat/completions",
  "/completion",
  "/chat/completions/input_tokens",
  "/tokenize",
  "/detokenize",
  "/apply-template",
];

const deep = (n: number) => `${"[".repeat(n)}0${"]".repeat(n)}`;
const deepObj = (n: number) => `${'{"a":'.repeat(n)}0${"}".repeat(n)}`;

type Rnd = () => number;
const pick = <T>(rnd: Rnd, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;

const GRAMMARS = [
  'root ::= root "a"',
  "root ::= a\na ::= b\nb ::= a",
  'root ::= ("a"*)*',
  'root ::= ("a"?)+ "b"',
  `root ::= ${"(".repeat(5000)}"a"${")".repeat(5000)}`,
  'root ::= "a"{0,100000}',
  'root ::= "a"{99999999}',
  "root ::= undefined-rule",
  "root ::= [",
  'root ::= [^]* "x"',
  "root ::= ",
  "",
  `root ::= ${Array.from({ length: 5000 }, (_, i) => `"w${i}"`).join(" | ")}`,
  'root ::= "\\x00" | "\\uD800"',
  `root ::= "${"x".repeat(200_000)}"`,
];

function schemaDeep(n: number): unknown {
  let s: unknown = { type: "string" };
  for (let i = 0; i < n; i++) s = { type: "object", properties: { a: s }, required: ["a"] };
  return s;
}

const SCHEMAS: unknown[] = [
  schemaDeep(30),
  schemaDeep(200),
  { $ref: "#" },
  { type: "object", properties: { a: { $ref: "#" } }, required: ["a"] },
  { $ref: "#/definitions/x", definitions: { x: { $ref: "#/definitions/x" } } },
  { enum: Array.from({ length: 20000 }, (_, i) => `v${i}`) },
  { type: "string", pattern: "(a+)+$" },
  { type: "array", minItems: 1e9 },
  { type: "array", items: { type: "string" }, minItems: 5, maxItems: 2 },
  { type: "string", minLength: 1e9 },
  { type: ["string", "number", "object", "array", "null", "boolean"] },
  { anyOf: Array.from({ length: 3000 }, (_, i) => ({ const: i })) },
  {
    type: "object",
    properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: "integer" }])),
  },
  { $ref: "http://example.com/schema.json" },
  { allOf: [{ type: "string" }, { type: "number" }] },
  { type: "integer", minimum: 5, maximum: 1 },
  true,
  false,
];

/** The classes of hostile request, each making variants. */
const CLASSES: readonly { name: string; make(rnd: Rnd): Omit<HostileRequest, "name"> }[] = [
  {
    name: "bad method",
    make: (r) => ({
      data: Buffer.from(`${pick(r, ["G@T", "BREW", "get", "P0ST", "\u0001"])} / HTTP/1.1\r\nhost: x\r\n\r\n`),
    }),
  },
  {
    name: "bad request line",
    make: (r) => ({
      data: Buffer.from(
        pick(r, [
          "GET\r\n\r\n",
          "GET / HTTP/9.9\r\n\r\n",
          "GET / HTTP/1.1 x\r\n\r\n",
          "GET /\r\n\r\n",
          " / HTTP/1.1\r\n\r\n",
          "\r\n\r\n\r\n",
        ]),
      ),
    }),
  },
  { name: "http/2 preface", make: () => ({ data: Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") }) },
  {
    name: "bad content-length",
    make: (r) => ({
      data: Buffer.from(
        `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${pick(r, ["-1", "abc", "1.5", "99999999999999999999999", "0x10", "5, 6", " "])}\r\n\r\n{"prompt":"x"}`,
      ),
    }),
  },
  {
    name: "two content-lengths",
    make: () => ({
      data: Buffer.from(
        'POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 14\r\ncontent-length: 3\r\n\r\n{"prompt":"x"}',
      ),
    }),
  },
  {
    name: "smuggling: content-length with chunked",
    make: (r) => ({
      data: Buffer.from(
        `POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 4\r\ntransfer-encoding: ${pick(r, ["chunked", " chunked", "chunked, identity", "xchunked"])}\r\n\r\n0\r\n\r\nGET /props HTTP/1.1\r\nhost: x\r\n\r\n`,
      ),
    }),
  },
  {
    name: "bad chunked body",
    make: (r) => ({
      data: Buffer.from(
        `POST /v1/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${pick(r, ["zz\r\nabc\r\n0\r\n\r\n", "ffffffffffffffff\r\n", "3\r\nabcdef\r\n0\r\n\r\n", "-1\r\n\r\n"])}`,
      ),
    }),
  },
  {
    name: "header too large",
    make: (r) => ({
      data: Buffer.from(
        r() < 0.5
          ? `GET /health HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000 + Math.floor(r() * 50_000))}\r\n\r\n`
          : `GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n${Array.from({ length: 2000 }, (_, i) => `x-h${i}: v`).join("\r\n")}\r\n\r\n`,
      ),
    }),
  },
  {
    name: "bad header bytes",
    make: (r) => ({
      data: Buffer.from(
        `GET /health HTTP/1.1\r\nhost: x\r\n${pick(r, ["x-a\u0001: b", "x a: b", ": b", "x-a: b\u0000c", "x-a:\r\n b"])}\r\n\r\n`,
        "latin1",
      ),
    }),
  },
  {
    name: "no host",
    make: () => ({ data: Buffer.from("GET /health HTTP/1.1\r\nconnection: close\r\n\r\n") }),
  },
  {
    name: "odd targets",
    make: (r) => ({
      data: http(
        "GET",
        pick(r, [
          "http://evil.example/health",
          "*",
          "/v1/models%",
          "/%c0%af",
          "/v1/%00",
          "/../../etc/passwd",
          `/${"a".repeat(10_000)}`,
          `/v1/models?${"q=1&".repeat(5000)}`,
          "/health?x=%zz",
          "//health",
        ]),
        [],
      ),
    }),
  },
  {
    name: "connect / trace / options",
    make: (r) => ({
      data: Buffer.from(
        pick(r, [
          "CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n",
          "TRACE / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
          "OPTIONS * HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        ]),
      ),
    }),
  },
  {
    name: "upgrade",
    make: () => ({
      data: http("GET", "/v1/models", [
        "upgrade: websocket",
        "connection: upgrade",
        "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version: 13",
      ]),
    }),
  },
  {
    name: "expect 100-continue",
    make: () => ({
      data: json("/v1/completions", '{"prompt":"x","max_tokens":2}', ["expect: 100-continue"]),
    }),
  },
  {
    name: "pipelined with a bad one between",
    make: () => ({
      data: Buffer.from(
        'GET /health HTTP/1.1\r\nhost: x\r\n\r\nPOST /tokenize HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 5\r\n\r\n{"a":GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n',
      ),
    }),
  },
  {
    name: "deep nesting",
    make: (r) => {
      const n = pick(r, [65, 100, 1000, 5000, 100_000]);
      const v = r() < 0.5 ? deep(n) : deepObj(n);
      return { data: json(pick(r, ROUTES), `{"prompt":"x","content":"x","${pick(r, FIELDS)}":${v}}`) };
    },
  },
  {
    name: "huge string field",
    make: (r) => ({
      data: json(
        pick(r, ROUTES),
        JSON.stringify({
          prompt: "x",
          [pick(r, FIELDS)]: "y".repeat(1_000_000 + Math.floor(r() * 6_000_000)),
        }),
      ),
    }),
  },
  {
    name: "body over the limit",
    make: () => ({ data: json("/v1/completions", `{"prompt":"${"z".repeat(9 * 1024 * 1024)}"}`) }),
  },
  {
    name: "bad encodings",
    make: (r) => ({
      data: json(
        pick(r, ROUTES),
        pick(r, [
          Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"prompt":"x"}')]),
          Buffer.from('{"prompt":"\xff\xfe\xc0\x80"}', "latin1"),
          Buffer.from('{"prompt":"x"}', "utf16le"),
          Buffer.from('{"prompt":"\\ud800"}'),
          Buffer.from('{"content":"\\ud800\\udc00\\udfff"}'),
        ]),
      ),
    }),
  },
  {
    name: "prototype keys",
    make: (r) => ({
      data: json(
        pick(r, ROUTES),
        pick(r, [
          '{"prompt":"x","__proto__":{"admin":true}}',
          '{"prompt":"x","constructor":{"prototype":{"admin":true}}}',
          '{"messages":[{"role":"user","content":"x","__proto__":{}}]}',
        ]),
      ),
    }),
  },
  {
    name: "odd numbers",
    make: (r) => ({
      data: json(
        "/v1/completions",
        `{"prompt":"x","${pick(r, FIELDS)}":${pick(r, ["1e400", "-1e400", "-0", "1".repeat(500), "1e-400", "0.30000000000000004"])}}`,
      ),
    }),
  },
  {
    name: "duplicate keys",
    make: () => ({
      data: json("/v1/completions", '{"prompt":"a","prompt":5,"max_tokens":2,"max_tokens":"x"}'),
    }),
  },
  {
    name: "special-token flood",
    make: (r) => ({
      data: json(
        pick(r, ["/v1/completions", "/tokenize"]),
        JSON.stringify({
          prompt: "<|im_start|>".repeat(10_000),
          content: "<s></s>".repeat(20_000),
          max_tokens: 2,
        }),
      ),
    }),
  },
  {
    name: "message flood",
    make: (r) => ({
      data: json(
        pick(r, ["/v1/chat/completions", "/apply-template"]),
        JSON.stringify({
          messages: Array.from({ length: 1000 + Math.floor(r() * 20_000) }, (_, i) => ({
            role: i % 2 ? "assistant" : "user",
            content: "hi",
          })),
          max_tokens: 2,
        }),
      ),
    }),
  },
  {
    name: "stop flood",
    make: (r) => ({
      data: json(
        "/v1/completions",
        JSON.stringify({
          prompt: "Once",
          max_tokens: 16,
          stop: Array.from({ length: r() < 0.5 ? 16 : 17 }, (_, i) => `${i}${"s".repeat(10_000)}`),
        }),
      ),
    }),
  },
  {
    name: "logit_bias flood",
    make: (r) => ({
      data: json(
        "/v1/completions",
        JSON.stringify({
          prompt: "Once",
          max_tokens: 4,
          logit_bias: Object.fromEntries(
            Array.from({ length: 100_000 }, (_, i) => [
              String(r() < 0.9 ? i % 512 : i),
              r() < 0.5 ? -100 : 100,
            ]),
          ),
        }),
      ),
    }),
  },
  {
    name: "pathological grammar",
    make: (r) => ({
      data: json(
        pick(r, ["/v1/completions", "/v1/chat/completions"]),
        JSON.stringify({
          prompt: "x",
          messages: [{ role: "user", content: "x" }],
          grammar: pick(r, GRAMMARS),
          max_tokens: 8,
        }),
      ),
    }),
  },
  {
    name: "pathological schema",
    make: (r) => ({
      data: json(
        pick(r, ["/v1/completions", "/v1/chat/completions"]),
        JSON.stringify({
          prompt: "x",
          messages: [{ role: "user", content: "x" }],
          response_format: { type: "json_schema", json_schema: { name: "s", schema: pick(r, SCHEMAS) } },
          max_tokens: 8,
        }),
      ),
    }),
  },
  {
    name: "tool floods and oddities",
    make: (r) => {
      const tool = (
        i: number,
        params: unknown = { type: "object", properties: { a: { type: "string" } } },
      ) => ({ type: "function", function: { name: `f${i}`, parameters: params } });
      return {
        data: json(
          "/v1/chat/completions",
          JSON.stringify({
            messages: [{ role: "user", content: "x" }],
            max_tokens: 8,
            ...pick(r, [
              { tools: Array.from({ length: 1000 }, (_, i) => tool(i)) },
              { tools: [tool(0, schemaDeep(100))], tool_choice: "required" },
              { tools: [tool(0)], tool_choice: { type: "function", function: { name: "nope" } } },
              { tools: [{ type: "function", function: { name: "a b", parameters: {} } }] },
              { tools: [tool(0), tool(0)] },
              { tools: [tool(0, pick(r, SCHEMAS))], tool_choice: "required" },
            ]),
          }),
        ),
      };
    },
  },
  {
    name: "bad tool history",
    make: (r) => ({
      data: json(
        "/v1/chat/completions",
        JSON.stringify({
          messages: [
            { role: "user", content: "x" },
            {
              role: pick(r, ["assistant", "user", "tool"]),
              content: null,
              tool_calls: pick(r, [
                [{ id: 1, type: "function", function: { name: "f", arguments: "{not json" } }],
                [{}],
                "x",
                [{ id: "c", type: "function", function: { name: "f", arguments: { a: 1 } } }],
              ]),
            },
            { role: "tool", tool_call_id: pick(r, ["c", 5, null, ""]), content: "r" },
          ],
          max_tokens: 4,
        }),
      ),
    }),
  },
  {
    name: "template kwargs",
    make: (r) => ({
      data: json(
        pick(r, ["/v1/chat/completions"]),
        JSON.stringify({
          messages: [{ role: "user", content: "x" }],
          max_tokens: 2,
          chat_template_kwargs: pick(r, [
            { messages: [] },
            { enable_thinking: { a: [1, 2] } },
            { x: "y".repeat(100_000) },
            { tools: 5 },
            [1, 2],
            "s",
            { add_generation_prompt: false },
            { range: Array.from({ length: 10_000 }, (_, i) => i) },
          ]),
        }),
      ),
    }),
  },
  {
    name: "heavy but valid",
    make: (r) => ({
      data: json(
        "/v1/completions",
        JSON.stringify({
          prompt: "Once upon a time",
          n: pick(r, [1, 8, 16]),
          logprobs: 20,
          max_tokens: 64,
          temperature: 1.5,
          stream: r() < 0.5,
        }),
      ),
    }),
  },
  {
    name: "detokenize floods",
    make: (r) => ({
      data: json(
        "/detokenize",
        JSON.stringify({
          tokens: pick(r, [
            Array.from({ length: 1_000_000 }, (_, i) => i % 512),
            [-1],
            [1.5],
            [2 ** 53],
            ["1"],
            [null],
            Array.from({ length: 100_000 }, () => 1e9),
          ]),
        }),
      ),
    }),
  },
  {
    name: "tokenize near the bound",
    make: (r) => ({
      data: json(
        "/tokenize",
        JSON.stringify({
          content: "Once upon a time. ".repeat(Math.floor(((r() < 0.5 ? 3.9 : 4.1) * 1024 * 1024) / 18)),
        }),
      ),
    }),
  },
  {
    name: "wrong methods",
    make: (r) => ({ data: http(pick(r, ["GET", "PUT", "DELETE", "PATCH", "HEAD"]), pick(r, ROUTES), []) }),
  },
  {
    name: "disconnect mid-stream",
    make: (r) => ({
      data: json(
        "/v1/completions",
        JSON.stringify({ prompt: "Once", max_tokens: 64, stream: true, n: pick(r, [1, 4]) }),
      ),
      hangUpAfter: 200,
    }),
  },
];

/** The `i`-th hostile request (the classes in turn), made when it is sent: some are megabytes. */
export function hostileRequest(i: number, rnd: Rnd): HostileRequest {
  const c = CLASSES[i % CLASSES.length]!;
  return { name: c.name, ...c.make(rnd) };
}

export const HOSTILE_CLASSES = CLASSES.length;
