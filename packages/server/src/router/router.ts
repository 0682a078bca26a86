// A multi-model server: one HTTP front that reads each request's `model`, has the ModelPool run that
// model (a server of its own on 127.0.0.1) and forwards the request there, streaming the answer back
// as it comes. /health and /v1/models are answered here; the list says which models are loaded.
import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { ApiError } from "../errors.js";
import { resolveLimits, type ServerLimits } from "../limits.js";
import { quote } from "../quote.js";
import { ServerError } from "../server-error.js";
import { WEBUI_PATHS, webuiAnswer } from "../webui.js";
import { ModelPool, type PoolModel, type PoolOptions, type Upstream } from "./model-pool.js";

export interface RouterOptions extends PoolOptions {
  /** When set, every endpoint but /health requires `Authorization: Bearer <apiKey>` (or `X-Api-Key`). */
  readonly apiKey?: string;
  /**
   * A model a request names that is not in `models` (e.g. `hf://…`): resolves to the model to add
   * (fetched first when needed), or undefined (404). Default: none.
   */
  readonly resolveModel?: (id: string) => Promise<PoolModel | undefined>;
  /** Serve the chat page at `/` (default true). */
  readonly webui?: boolean;
  /** Bounds on requests (body size, timeouts); unset ones take SERVER_LIMITS. */
  readonly limits?: Partial<ServerLimits>;
}

export interface ModelRouter {
  readonly pool: ModelPool;
  /** Starts listening; resolves to the address, e.g. http://127.0.0.1:8080. */
  listen(port?: number, host?: string): Promise<string>;
  /** Stops listening and unloads every model. */
  close(): Promise<void>;
}

const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "authorization",
  "x-api-key",
]);

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendError(res: ServerResponse, e: ApiError): void {
  send(res, e.status, e.body(), { ...e.headers });
}

/** The request body, at most `max` bytes (413 beyond). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) {
        reject(
          new ApiError(
            413,
            `the request body is larger than ${max} bytes`,
            "invalid_request_error",
            null,
            "body_too_large",
          ),
        );
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** The model a request names: its JSON body's `model`, else its query's `model`. */
function modelOf(req: IncomingMessage, body: Buffer): string | undefined {
  const q = new URL(req.url ?? "/", "http://x").searchParams.get("model");
  if (body.length > 0 && /json/i.test(req.headers["content-type"] ?? "json")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      throw new ApiError(
        400,
        "the request body is not valid JSON",
        "invalid_request_error",
        null,
        "invalid_json",
      );
    }
    const m = (parsed as { model?: unknown } | null)?.model;
    if (typeof m === "string") return m;
    if (m !== undefined)
      throw new ApiError(400, "`model` must be a string", "invalid_request_error", "model");
  }
  return q ?? undefined;
}

/** Forwards the request to `up` and streams its answer back; resolves when the exchange is over. */
function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, up: Upstream): Promise<void> {
  return new Promise((resolve) => {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined && !HOP_HEADERS.has(k)) headers[k] = v;
    Object.assign(headers, up.headers ?? {});
    headers["content-length"] = String(body.length);
    const target = new URL(req.url ?? "/", up.url);
    const out = httpRequest(target, { method: req.method, headers }, (ans) => {
      const h: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(ans.headers))
        if (v !== undefined && k !== "connection" && k !== "keep-alive") h[k] = v;
      res.writeHead(ans.statusCode ?? 502, h);
      ans.pipe(res);
      ans.on("end", () => resolve());
      ans.on("error", () => {
        res.destroy();
        resolve();
      });
    });
    out.on("error", (err) => {
      if (!res.headersSent)
        sendError(
          res,
          new ApiError(
            502,
            `the model's server did not answer: ${err.message}`,
            "server_error",
            null,
            "upstream_failed",
          ),
        );
      else res.destroy();
      resolve();
    });
    // a client that goes away stops the model's work (the upstream sees its connection close)
    res.on("close", () => {
      if (!res.writableFinished) out.destroy();
      resolve();
    });
    out.end(body);
  });
}

export function createModelRouter(options: RouterOptions): ModelRouter {
  const limits = resolveLimits(options.limits);
  if (options.apiKey !== undefined && options.apiKey === "")
    throw new ServerError("INVALID_ARGUMENT", "apiKey must not be empty");
  const pool = new ModelPool(options);
  const created = Math.floor(Date.now() / 1000);
  const listing = () => ({
    object: "list",
    data: pool.list().map((m) => ({
      id: m.id,
      object: "model",
      created,
      owned_by: "minfer",
      status: { value: m.state, ...(m.error !== undefined ? { error: m.error } : {}) },
      active_requests: m.active,
    })),
  });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const origin = req.headers.origin;
    if (origin) res.setHeader("access-control-allow-origin", origin);
    if (req.method === "OPTIONS") {
      res.writeHead(200, {
        "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
        "access-control-allow-headers": "*",
        "access-control-max-age": "86400",
      });
      res.end();
      return;
    }
    if (path === "/health" || path === "/v1/health") return send(res, 200, { status: "ok" });
    if (req.method === "GET" && WEBUI_PATHS.has(path)) {
      const a = webuiAnswer(options.webui ?? true);
      res.writeHead(a.status, { ...a.headers, "content-length": Buffer.byteLength(a.body) });
      res.end(a.body);
      return;
    }
    if (
      options.apiKey !== undefined &&
      req.headers.authorization !== `Bearer ${options.apiKey}` &&
      req.headers["x-api-key"] !== options.apiKey
    )
      return sendError(
        res,
        new ApiError(401, "invalid or missing API key", "authentication_error", null, "invalid_api_key", {
          "www-authenticate": 'Bearer realm="minfer"',
        }),
      );
    if (req.method === "GET" && (path === "/v1/models" || path === "/models"))
      return send(res, 200, listing());
    const body = await readBody(req, limits.bodyBytes);
    const id = modelOf(req, body);
    if (id === undefined)
      throw new ApiError(
        400,
        `name a model in \`model\` (this server runs several: ${pool.ids().join(", ")})`,
        "invalid_request_error",
        "model",
        "model_required",
      );
    if (!pool.has(id) && options.resolveModel) {
      let found: PoolModel | undefined;
      try {
        found = await options.resolveModel(id);
      } catch (e) {
        throw new ApiError(
          404,
          `the model ${quote(id)} could not be fetched: ${e instanceof Error ? e.message : String(e)}`,
          "invalid_request_error",
          "model",
          "model_not_found",
        );
      }
      if (found) pool.add({ ...found, id });
    }
    if (!pool.has(id))
      throw new ApiError(
        404,
        `the model ${quote(id)} does not exist (models: ${pool.ids().join(", ")})`,
        "invalid_request_error",
        "model",
        "model_not_found",
      );
    let up: Upstream;
    try {
      up = await pool.acquire(id);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      throw new ApiError(
        503,
        `the model ${id} could not be loaded: ${msg}`,
        "unavailable_error",
        null,
        "load_failed",
        { "retry-after": "5" },
      );
    }
    try {
      await forward(req, res, body, up);
    } finally {
      pool.release(id);
    }
  };

  const server = createHttpServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.headerBytes,
    },
    (req, res) => {
      handle(req, res).catch((e: unknown) => {
        if (e instanceof ApiError) sendError(res, e);
        else
          sendError(
            res,
            new ApiError(500, e instanceof Error ? e.message : String(e), "server_error", null, "internal"),
          );
      });
    },
  );

  return {
    pool,
    listen(port = 8080, host = "127.0.0.1") {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          const a = server.address() as AddressInfo;
          resolve(`http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`);
        });
      });
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 500).unref();
      });
      await pool.close();
    },
  };
}
