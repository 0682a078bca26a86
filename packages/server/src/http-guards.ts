import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import { ApiError } from "./errors.js";
import type { ServerLimits } from "./limits.js";
import { jsonTextNestsDeeperThan } from "./quote.js";

// What the HTTP layer refuses before a route runs: malformed or slow requests, too many
// connections from one client, CONNECT. Each is answered with an OpenAI error object, as a route's
// errors are, and the connection is closed.

/** Bodies larger than this are parsed, checked and handled in separate turns of the event loop. */
const SPLIT_BYTES = 256 * 1024;

/** Writes `error` as a whole HTTP/1.1 response on a raw socket and closes it. */
export function answerRaw(socket: Socket, error: ApiError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(error.body());
  const extra = Object.entries(error.headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  if (socket.writable)
    socket.end(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? "Error"}\r\n` +
        `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `${extra}connection: close\r\n\r\n${body}`,
    );
  // A client that does not read its answer does not hold the socket.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** The answer to an error Node's HTTP parser or its timers raised on a connection. */
export function clientErrorAnswer(err: NodeJS.ErrnoException, limits: ServerLimits): ApiError {
  switch (err.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError(
        408,
        `the request was not received in time: headers within ${limits.headersTimeoutMs / 1000} s, ` +
          `the whole request within ${limits.requestTimeoutMs / 1000} s`,
        "invalid_request_error",
        null,
        "request_timeout",
      );
    case "HPE_HEADER_OVERFLOW":
      return new ApiError(
        431,
        `the request's headers exceed ${limits.headerBytes} bytes`,
        "invalid_request_error",
        null,
        "headers_too_large",
      );
    case "HPE_INVALID_METHOD":
      return new ApiError(
        400,
        "the request's method is not valid HTTP",
        "invalid_request_error",
        null,
        "bad_method",
      );
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return new ApiError(
        400,
        "the request's Content-Length is not valid",
        "invalid_request_error",
        null,
        "bad_content_length",
      );
    default:
      return new ApiError(
        400,
        `the request is not valid HTTP/1.1 (${err.code ?? "parse error"})`,
        "invalid_request_error",
        null,
        "bad_http",
      );
  }
}

/** Node's http.createServer options that bound header and body read times and header size. */
export function httpOptions(limits: ServerLimits): Record<string, number | boolean> {
  return {
    headersTimeout: limits.headersTimeoutMs,
    maxHeaderSize: limits.headerBytes,
    // A missing Host is refused by the onRequest hook, with an OpenAI error instead of Node's bare 400.
    requireHostHeader: false,
    // How often Node looks for requests past their read bounds: a fraction of the shortest bound,
    // so a slow client is cut close to it (Node's default looks every 30 s).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
  };
}

/**
 * Guards on the server's sockets: at most `connectionsPerClient` open connections per client
 * address (one more is answered 429 and closed), and CONNECT answered 405 instead of dropped.
 */
export function guardConnections(app: FastifyInstance, limits: ServerLimits): void {
  const open = new Map<string, number>();
  app.server.on("connection", (socket: Socket) => {
    const who = socket.remoteAddress ?? "unknown";
    const n = (open.get(who) ?? 0) + 1;
    if (n > limits.connectionsPerClient) {
      answerRaw(
        socket,
        new ApiError(
          429,
          `this client already holds ${limits.connectionsPerClient} open connections to the server; reuse or close one`,
          "rate_limit_error",
          null,
          "too_many_connections",
          { "retry-after": "1" },
        ),
      );
      return;
    }
    open.set(who, n);
    socket.once("close", () => {
      const left = (open.get(who) ?? 1) - 1;
      if (left <= 0) open.delete(who);
      else open.set(who, left);
    });
  });
  app.server.on("connect", (_request, socket: Socket) => {
    answerRaw(
      socket,
      new ApiError(
        405,
        "CONNECT is not served here: this is not a proxy",
        "invalid_request_error",
        null,
        "bad_method",
      ),
    );
  });
}

/**
 * Replaces fastify's JSON body parser with one that also refuses bodies nested deeper than
 * `jsonDepth` (400 `nesting_too_deep`), keeping its protection against prototype poisoning.
 */
export function guardJsonBodies(app: FastifyInstance, limits: ServerLimits): void {
  const parse = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body as string;
    // After parsing a large body, other requests get a turn before it is checked and handled: the
    // parse of a few megabytes holds the event loop tens of milliseconds on its own.
    const next = text.length > SPLIT_BYTES ? (f: () => void) => setImmediate(f) : (f: () => void) => f();
    // Refused on its text, before parsing: a bracket count outside strings.
    if (jsonTextNestsDeeperThan(text, limits.jsonDepth))
      return done(
        new ApiError(
          400,
          `the JSON body nests arrays and objects deeper than ${limits.jsonDepth} levels`,
          "invalid_request_error",
          null,
          "nesting_too_deep",
        ),
        undefined,
      );
    next(() =>
      parse(request, text, (err: Error | null, value?: unknown) => {
        if (err) return done(err, undefined);
        next(() => done(null, value));
      }),
    );
  });
}
