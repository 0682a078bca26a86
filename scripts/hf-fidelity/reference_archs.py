#!/usr/bin/env python3
"""transformers' float32 reference for the converter's new architectures (issue 20), run on the GPU machine.

For every case of packages/cli/src/convert/tiny-configs.json (Gemma, Gemma 2, Gemma 3, Phi-3 4k and
128k/LongRoPE, Phi-4-mini (partial rotary, tied), GLM-4, Granite, OLMo 2): a randomly initialised
checkpoint built by transformers from the case's config (fixed seed, float32, eager attention so
Gemma 2's soft-capping and the sliding windows apply), saved with save_pretrained (safetensors),
then transformers' greedy continuation of three prompts (token ids, valid in every case's
vocabulary) and the float32 logits at each prompt's last position, computed on the CPU.

Writes under OUT:
  NAME/        the checkpoint (config.json, model.safetensors); no tokenizer files: add the case's
               with writeTokenizerFiles (packages/cli/src/convert/tiny-checkpoint.ts) before
               `minfer convert` (the vocabulary is the case's "vocab" fixture)
  NAME.json    {name, class, config, versions, prompts: [{prompt_ids, greedy_ids, last_logits}]}
and prints each NAME.json as one line of JSON on stdout.

Usage: python3 reference_archs.py OUT [STEPS] [NAME ...]
"""
import json
import os
import sys

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = os.path.join(ROOT, "packages", "cli", "src", "convert", "tiny-configs.json")
PROMPTS = [
    [1, 450, 4996, 17354, 1701, 432, 17204, 975],
    [13, 1576, 3186, 338, 263, 2107],
    [29892, 322, 445, 385, 1243, 310, 278, 931, 29889, 450, 3186, 338],
]


def rope_parameters(case):
    """The case's RoPE settings in transformers 5's `rope_parameters` spelling."""
    cfg = dict(case["config"])
    theta = cfg.pop("rope_theta", 10000.0)
    scaling = cfg.pop("rope_scaling", None) or {}
    scaling = {("rope_type" if k == "type" else k): v for k, v in scaling.items()}
    scaling.setdefault("rope_type", "default")
    if "partial_rotary_factor" in cfg:
        scaling["partial_rotary_factor"] = cfg["partial_rotary_factor"]
    if "original_max_position_embeddings" in cfg and scaling["rope_type"] == "longrope":
        scaling["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
    full = {**scaling, "rope_theta": theta}
    if "rope_local_base_freq" in cfg:  # Gemma 3: the sliding layers' own base, unscaled
        local = cfg.pop("rope_local_base_freq")
        cfg["rope_parameters"] = {"full_attention": full, "sliding_attention": {"rope_type": "default", "rope_theta": local}}
    else:
        cfg["rope_parameters"] = full
    return cfg


def config(case):
    """The transformers config of a case (transformers 4's keys; else transformers 5's)."""
    try:
        cfg = AutoConfig.for_model(case["model_type"], **case["config"])
    except (TypeError, ValueError) as e:
        # transformers 5: RoPE settings as rope_parameters, and only the keys its class declares.
        print(f"{case['name']}: {e}; retrying with rope_parameters", file=sys.stderr)
        known = AutoConfig.for_model(case["model_type"]).to_dict()
        kwargs = {k: v for k, v in rope_parameters(case).items() if k in known or k == "rope_parameters"}
        cfg = AutoConfig.for_model(case["model_type"], **kwargs)
    cfg.architectures = [case["class"]]
    return cfg


def build(case, out):
    """A random float32 checkpoint of `case`: weights N(0, 0.1) (the embedding 0.5), every vector
    (norm weights, biases) its init plus N(0, 0.1), so Gemma's (1 + w) and GLM-4's biases matter."""
    torch.manual_seed(case["seed"])
    model = AutoModelForCausalLM.from_config(config(case), attn_implementation="eager").float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
            else:
                p.normal_(0.0, 0.5 if "embed_tokens" in name else 0.1)
    path = os.path.join(out, case["name"])
    model.float().eval().save_pretrained(path, safe_serialization=True)
    return path


@torch.no_grad()
def reference(case, path, steps):
    # Saved in float32, so loaded in float32 (transformers 4's default, transformers 5's "auto").
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").float().eval()
    prompts = []
    for ids in PROMPTS:
        seq = torch.tensor([ids])
        logits = model(seq).logits[0, -1].float()
        last = logits.tolist()
        greedy = []
        for _ in range(steps):
            nxt = int(torch.argmax(logits))
            greedy.append(nxt)
            seq = torch.cat([seq, torch.tensor([[nxt]])], dim=1)
            logits = model(seq).logits[0, -1].float()
        prompts.append({"prompt_ids": ids, "greedy_ids": greedy, "last_logits": last})
    return {
        "name": case["name"],
        "class": case["class"],
        "config": model.config.to_dict(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "prompts": prompts,
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    only = set(sys.argv[3:])
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(8)
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(CASES) as f:
        cases = json.load(f)["cases"]
    for case in cases:
        if only and case["name"] not in only:
            continue
        result = reference(case, build(case, out), steps)
        with open(os.path.join(out, f"{case['name']}.json"), "w") as f:
            json.dump(result, f, default=str)
        print(json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
