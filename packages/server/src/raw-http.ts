import { connect, type Socket } from "node:net";

// Test helper: HTTP/1.1 spoken by hand over a socket, for the requests a fetch client never sends
// (slow, malformed, oversized) and to see when the server closes the connection.

/** A response read off a raw socket, and when the server closed it. */
export interface RawResult {
  /** Everything the server sent. */
  readonly text: string;
  /** The status of the first response, or 0 when none came. */
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The first response's body. */
  readonly body: string;
  /** Milliseconds from the first byte written to the server closing the socket (or to `waitMs`). */
  readonly ms: number;
  /** Whether the server closed the socket within `waitMs`. */
  readonly closed: boolean;
}

/** Splits the first HTTP response out of a raw byte stream (Content-Length framed or to the end). */
export function parseResponse(text: string): Pick<RawResult, "status" | "headers" | "body"> {
  const at = text.indexOf("\r\n\r\n");
  if (!text.startsWith("HTTP/1.1 ") || at < 0) return { status: 0, headers: {}, body: "" };
  const [statusLine, ...lines] = text.slice(0, at).split("\r\n");
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const rest = text.slice(at + 4);
  const len = headers["content-length"];
  return {
    status: Number(statusLine!.split(" ")[1]),
    headers,
    body: len !== undefined ? Buffer.from(rest).subarray(0, Number(len)).toString() : rest,
  };
}

/**
 * Connects to `url`'s host and port, writes `parts` (a string is written at once; between parts
 * of an array, `gapMs`), and reads until the server closes the socket or `waitMs` passes.
 */
export function rawRequest(
  url: string,
  parts: string | readonly (string | Buffer)[],
  options: { waitMs?: number; gapMs?: number; onSocket?: (s: Socket) => void } = {},
): Promise<RawResult> {
  const { hostname, port } = new URL(url);
  const waitMs = options.waitMs ?? 10_000;
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    options.onSocket?.(socket);
    const chunks: Buffer[] = [];
    let t0 = 0;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString();
      resolve({ text, ...parseResponse(text), ms: performance.now() - t0, closed });
      socket.destroy();
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on("data", (d) => chunks.push(d));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", async () => {
      t0 = performance.now();
      const list = typeof parts === "string" ? [parts] : parts;
      for (let i = 0; i < list.length; i++) {
        if (i > 0 && options.gapMs) await new Promise((r) => setTimeout(r, options.gapMs));
        if (socket.destroyed) return;
        socket.write(list[i]!);
      }
    });
  });
}

/** Whether `body` is an OpenAI error object: `{"error": {"message", "type", "param", "code"}}`. */
export function isOpenAiError(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const e = (body as { error?: unknown }).error;
  if (typeof e !== "object" || e === null) return false;
  const o = e as Record<string, unknown>;
  return (
    typeof o.message === "string" &&
    o.message !== "" &&
    typeof o.type === "string" &&
    "param" in o &&
    "code" in o &&
    (o.code === null || typeof o.code === "string")
  );
}
