#!/usr/bin/env python3
"""llama.cpp's llama-server on the GGUFs `hf-bert.js compare` converted (issue 25), against transformers.

DIR holds what the GPU run returned (OUT/all/hf-bert): NAME-f32.gguf, minfer's conversion of a tiny
checkpoint transformers made, and NAME.json, transformers' / sentence-transformers' outputs
(scripts/hf-fidelity/reference_bert.py). For each embedding model, llama-server --embedding embeds every text
(/v1/embeddings: its pooling from the file, L2-normalised) and the worst cosine against
sentence-transformers' is printed; for each cross-encoder, llama-server --reranking scores every
(query, document) pair (/rerank) and the largest |score - transformers' logit| is printed. llama.cpp's BERT uses the tanh GELU and
gives every token type 0, so its figures bound how close another engine gets on these files.

Usage: python3 bert_vs_llamacpp.py DIR LLAMA_SERVER
"""
import json
import math
import os
import subprocess
import sys
import time
import urllib.request

PORT = 8097


def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))


def serve(binary, model, flag):
    """llama-server on the file (--embedding or --reranking), once /health answers."""
    proc = subprocess.Popen([binary, "-m", model, "--port", str(PORT), "-t", "2", flag],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=1)
            return proc
        except Exception:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"llama-server did not start on {model}")


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    root, binary = sys.argv[1], sys.argv[2]
    for f in sorted(os.listdir(root)):
        if not f.endswith("-f32.gguf"):
            continue
        name = f[: -len("-f32.gguf")]
        ref = json.load(open(os.path.join(root, name + ".json")))
        model = os.path.join(root, f)
        if "embeddings" in ref:
            proc = serve(binary, model, "--embedding")
            try:
                got = post("/v1/embeddings", {"input": [e["text"] for e in ref["embeddings"]]})["data"]
            finally:
                proc.kill()
            worst = min(cosine(g["embedding"], e["embedding"]) for g, e in zip(got, ref["embeddings"]))
            print(json.dumps({"model": name, "engine": "llama.cpp", "minCosine": worst}))
        else:
            proc = serve(binary, model, "--reranking")
            try:
                diffs = []
                for s in ref["scores"]:
                    got = post("/rerank", {"query": s["query"], "documents": [s["document"]]})["results"][0]
                    diffs.append(abs(got["relevance_score"] - s["logits"][0]))
            finally:
                proc.kill()
            print(json.dumps({"model": name, "engine": "llama.cpp", "maxScoreDiff": max(diffs)}))

if __name__ == "__main__":
    main()
