#!/usr/bin/env python3
"""transformers' and sentence-transformers' reference for the BERT family (issue 25), on the GPU machine.

`node dist/hf-bert.js prep DIR` first writes DIR/cases.json and, per case, DIR/NAME/ with config.json,
the tokenizer files and sentence-transformers' pooling files (packages/cli/src/convert/tiny-bert.ts).
This script then, per case: builds the model class named in cases.json from that config.json with
transformers (float32, seeded random weights at a trained model's scale: matrices N(0, 0.2), token
embeddings N(0, 0.5), norms 1 + N(0, 0.1), biases N(0, 0.1)), saves it over DIR/NAME with
save_pretrained (config.json, model.safetensors), and computes on the CPU in float32:
  embedding models   the tokenizer's ids of each text and sentence-transformers' own embedding of the
                     saved directory (modules.json: Transformer, Pooling, Normalize), or, where the
                     sentence_transformers package is not installed, its pooling written out here
                     (mean over the attention mask or the first token, then L2) and "by": "manual"
  cross-encoders     the tokenizer's ids and token types of each (query, document) pair and the
                     classifier's logits (what llama.cpp's rank pooling returns)
Writes DIR/NAME.json ({name, class, by, versions, embeddings | scores}).

Usage: python3 reference_bert.py DIR
"""
import json
import os
import sys

import torch
import transformers


def reinit(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "LayerNorm.weight" in name or name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * r)
            elif p.dim() == 1:
                p.copy_(0.1 * r)
            elif "word_embeddings" in name:
                p.copy_(0.5 * r)
            else:
                p.copy_(0.2 * r)


def flatten_special_tokens(path):
    """tokenizer_config.json's special tokens as plain strings (transformers 5 refuses a dict without __type)."""
    f = os.path.join(path, "tokenizer_config.json")
    if not os.path.exists(f):
        return
    cfg = json.load(open(f))
    for k, v in list(cfg.items()):
        if k.endswith("_token") and isinstance(v, dict) and "content" in v:
            cfg[k] = v["content"]
    json.dump(cfg, open(f, "w"))


def embeddings(path, case, tok, model, versions):
    texts = case["texts"]
    ids = [tok(t)["input_ids"] for t in texts]
    try:
        import sentence_transformers

        st = sentence_transformers.SentenceTransformer(path, device="cpu")
        vecs = st.encode(texts, convert_to_tensor=True, normalize_embeddings=False).tolist()
        versions["sentence_transformers"] = sentence_transformers.__version__
        by = "sentence-transformers"
    except Exception as e:  # not installed, or it could not load the directory: pooling written out
        versions["sentence_transformers_error"] = repr(e)[:300]
        vecs = []
        for i in ids:
            with torch.no_grad():
                h = model(input_ids=torch.tensor([i])).last_hidden_state[0]
            v = h.mean(0) if case["pooling"] == "mean" else h[0]
            vecs.append(torch.nn.functional.normalize(v, dim=0).tolist())
        by = "manual"
    return by, [{"text": t, "ids": i, "embedding": v} for t, i, v in zip(texts, ids, vecs)]


def scores(case, tok, model):
    out = []
    for q, d in case["pairs"]:
        enc = tok(q, d, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0].tolist()
        types = enc["token_type_ids"][0].tolist() if "token_type_ids" in enc else [0] * enc["input_ids"].shape[1]
        out.append({"query": q, "document": d, "ids": enc["input_ids"][0].tolist(), "types": types, "logits": logits})
    return out


def main():
    root = sys.argv[1]
    torch.set_num_threads(4)
    cases = json.load(open(os.path.join(root, "cases.json")))
    for case in cases:
        path = os.path.join(root, case["name"])
        config = transformers.AutoConfig.from_pretrained(path)
        model = getattr(transformers, case["class"])(config).float().eval()
        reinit(model, case["seed"])
        model.save_pretrained(path, safe_serialization=True)
        flatten_special_tokens(path)
        tok = transformers.AutoTokenizer.from_pretrained(path)
        versions = {"torch": torch.__version__, "transformers": transformers.__version__}
        res = {"name": case["name"], "class": case["class"], "versions": versions}
        if case["pooling"]:
            res["by"], res["embeddings"] = embeddings(path, case, tok, model, versions)
        else:
            res["by"], res["scores"] = "transformers", scores(case, tok, model)
        with open(os.path.join(root, case["name"] + ".json"), "w") as f:
            json.dump(res, f)
        print(json.dumps({k: res[k] for k in ("name", "class", "by", "versions")}))


if __name__ == "__main__":
    main()
