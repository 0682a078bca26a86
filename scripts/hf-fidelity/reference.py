#!/usr/bin/env python3
"""transformers' float32 reference for minfer's fidelity check (issue 7), run on the GPU machine.

For the trained default model (its Hugging Face checkpoint, carried in) and for randomly initialised
Llama (with llama3 RoPE scaling) and Qwen2 (Q/K/V biases) checkpoints made here with the default
model's tokenizer: the greedy continuation of a few prompts and the float32 logits of every step,
computed on the CPU in float32 (no TF32, no autocast). Writes under OUT:
  NAME/            the random checkpoints (config.json, model.safetensors, tokenizer files)
  NAME.json        {prompts: [{text, prompt_ids, greedy_ids, logits: "NAME-K.f32"}], vocab, versions}
  NAME-K.f32       float32 logits, (steps + 1) rows of vocab values: the prompt's last position,
                   then one row per generated token's position
Usage: python3 reference.py TRAINED_HF_DIR OUT [STEPS]
"""
import json
import os
import shutil
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = ["The jury said", "In the morning, the", "She looked at him and"]


def random_checkpoint(kind, trained, out):
    """A randomly initialised checkpoint sharing the trained model's tokenizer."""
    torch.manual_seed(7 if kind == "llama" else 8)
    vocab = 4096
    common = dict(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=352,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        initializer_range=0.1,  # peaked logits: greedy steps are not near-ties
        bos_token_id=4095,
        eos_token_id=4095,
    )
    if kind == "llama":
        rope = {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        }
        try:
            cfg = transformers.LlamaConfig(**common, rope_parameters=rope)
        except TypeError:
            cfg = transformers.LlamaConfig(
                **common,
                rope_theta=rope["rope_theta"],
                rope_scaling={k: v for k, v in rope.items() if k != "rope_theta"},
            )
        model = transformers.LlamaForCausalLM(cfg)
    else:
        cfg = transformers.Qwen2Config(**common, rope_theta=1000000.0)
        model = transformers.Qwen2ForCausalLM(cfg)
        # Qwen2's q/k/v biases start at zero; make them matter.
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    proj.bias.normal_(0.0, 0.1)
    model = model.float().eval()
    path = os.path.join(out, kind)
    model.save_pretrained(path, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(trained, f), os.path.join(path, f))
    return path


@torch.no_grad()
def reference(name, path, out, steps):
    torch.backends.cuda.matmul.allow_tf32 = False
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(path)
    result = {"name": name, "vocab": model.config.vocab_size, "prompts": [], "versions": {
        "torch": torch.__version__, "transformers": transformers.__version__}}
    for k, text in enumerate(PROMPTS):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        seq = torch.tensor([ids])
        rows = []
        greedy = []
        for _ in range(steps + 1):
            logits = model(seq).logits[0, -1].float()
            rows.append(logits.cpu())
            nxt = int(torch.argmax(logits))
            if len(greedy) < steps:
                greedy.append(nxt)
                seq = torch.cat([seq, torch.tensor([[nxt]])], dim=1)
        file = f"{name}-{k}.f32"
        torch.stack(rows).numpy().astype("<f4").tofile(os.path.join(out, file))
        result["prompts"].append({"text": text, "prompt_ids": ids, "greedy_ids": greedy, "logits": file})
        print(f"{name}: {text!r} -> {tok.decode(greedy)!r}", flush=True)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(result, f)


def main():
    trained, out = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(8)
    reference("trained", trained, out, steps)
    for kind in ("llama", "qwen2"):
        reference(kind, random_checkpoint(kind, trained, out), out, steps)


if __name__ == "__main__":
    main()
