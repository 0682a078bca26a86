// A stand-in for the Hugging Face hub on 127.0.0.1 for the tests: the same URL layout and headers
// (resolve URLs answering 302 to a storage URL with X-Linked-Etag / X-Linked-Size, the storage URL
// honouring Range with 206 and Content-Range, the tree API listing a repository), and faults on
// demand: a connection broken mid-file, bytes that do not match the published sha256, no sha256.
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface HubFile {
  readonly data: Uint8Array;
  /** Break the connection after this fraction of the body, on this many requests (then serve whole). */
  breakAt?: number;
  breaks?: number;
  /** Serve these bytes instead of `data` (the published sha256 stays data's). */
  corrupt?: Uint8Array;
  /** Publish no sha256 (an ETag that is not one, as for small files kept in git). */
  noSha?: boolean;
}

export interface HubRequest {
  readonly method: string;
  readonly url: string;
  readonly range?: string;
}

export interface TestHub {
  readonly endpoint: string;
  /** repo "owner/name" → file path → file. */
  readonly repos: Map<string, Map<string, HubFile>>;
  readonly requests: HubRequest[];
  close(): Promise<void>;
}

const sha = (d: Uint8Array) => createHash("sha256").update(d).digest("hex");

function serveBytes(req: IncomingMessage, res: ServerResponse, f: HubFile): void {
  const body = f.corrupt ?? f.data;
  const etag = f.noSha ? `"${sha(f.data).slice(0, 40)}"` : `"${sha(f.data)}"`;
  let start = 0;
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
  if (m) start = Number(m[1]);
  if (start > body.length) {
    res.writeHead(416, { "content-range": `bytes */${body.length}` }).end();
    return;
  }
  const part = body.subarray(start);
  const head: Record<string, string | number> = {
    "content-length": part.length,
    etag,
    "accept-ranges": "bytes",
  };
  if (m) head["content-range"] = `bytes ${start}-${body.length - 1}/${body.length}`;
  res.writeHead(m ? 206 : 200, head);
  if (req.method === "HEAD") {
    res.end();
    return;
  }
  if (f.breaks && f.breaks > 0 && f.breakAt !== undefined) {
    f.breaks--;
    const cut = Math.max(0, Math.floor(body.length * f.breakAt) - start);
    res.write(part.subarray(0, cut), () => setTimeout(() => res.socket?.destroy(), 20));
    return;
  }
  res.end(part);
}

/** Starts the stand-in; `repos` may be filled before or after. */
export async function startTestHub(): Promise<TestHub> {
  const repos = new Map<string, Map<string, HubFile>>();
  const requests: HubRequest[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    requests.push({
      method: req.method ?? "",
      url: url.pathname,
      ...(req.headers.range ? { range: req.headers.range } : {}),
    });
    const path = decodeURIComponent(url.pathname);
    const tree = /^\/api\/models\/([^/]+)\/([^/]+)\/tree\/([^/]+)$/.exec(path);
    if (tree) {
      const files = repos.get(`${tree[1]}/${tree[2]}`);
      if (!files) return void res.writeHead(404).end();
      const list = [...files].map(([p, f]) => ({ type: "file", path: p, size: f.data.length }));
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(list));
    }
    const resolve = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (resolve) {
      const f = repos.get(`${resolve[1]}/${resolve[2]}`)?.get(resolve[4]!);
      if (!f) return void res.writeHead(404).end();
      if (f.noSha) return serveBytes(req, res, f); // served in place, its ETag a git blob id

      return void res
        .writeHead(302, {
          location: `/storage/${encodeURIComponent(`${resolve[1]}/${resolve[2]}`)}/${encodeURIComponent(resolve[4]!)}`,
          "x-linked-etag": `"${sha(f.data)}"`,
          "x-linked-size": String(f.data.length),
          etag: '"0123456789abcdef0123456789abcdef01234567"',
        })
        .end();
    }
    const storage = /^\/storage\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (storage) {
      const f = repos.get(decodeURIComponent(storage[1]!))?.get(decodeURIComponent(storage[2]!));
      if (!f) return void res.writeHead(404).end();
      return serveBytes(req, res, f);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    repos,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
