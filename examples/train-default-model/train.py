#!/usr/bin/env python3
"""Trains minfer's built-in default model: a tiny Qwen3 on the Brown corpus.

    python3 train.py --corpus brown.txt --out OUT_DIR [--time-limit 420]

1. A byte-level BPE tokenizer (4095 merges-and-bytes + <|endoftext|> = 4096 tokens) is trained
   with `tokenizers` on the corpus, with Qwen2's normalizer (NFC), pre-tokenizer (its split regex,
   then ByteLevel without its own regex) and decoder, so a converter can write
   tokenizer.ggml.pre = "qwen2".
2. A Qwen3ForCausalLM (about 7.3M parameters, tied embeddings) is trained on the corpus with
   <|endoftext|> before every document: AdamW, warmup + cosine schedule, bf16 autocast. The corpus
   is small (about 1.6M tokens) and a longer schedule overfits it, so `--schedules` can name several
   schedule lengths, each trained from the same initialisation; the model with the lowest held-out
   loss is kept (a sweep over 500,1000,2000,3000 steps chose the default, 1000).
3. The best model is saved in float32 (config.json, model.safetensors, generation_config.json) with
   tokenizer.json and tokenizer_config.json, reloaded from disk with transformers, and sampled.

Everything is seeded; the log goes to stdout.
"""

import argparse
import json
import math
import os
import random
import time

import torch
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import trainers

# Qwen2's (and Qwen3's) pre-tokenizer split pattern, exactly as in their tokenizer.json.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
EOT = "<|endoftext|>"
PROMPTS = [
    "The jury said",
    "He looked at her and",
    "In the morning, the",
    "The United States",
    "It is not easy to",
    "She",
]


def log(*args):
    print(*args, flush=True)


def read_documents(path):
    text = open(path, encoding="utf-8").read()
    # prepare-corpus.mjs separates documents by two blank lines, paragraphs by one.
    return [d.strip("\n") for d in text.split("\n\n\n") if d.strip()]


def qwen2_byte_level(bpe):
    """A tokenizer over the BPE model `bpe` with Qwen2's normalizer, pre-tokenizer and decoder."""
    tok = Tokenizer(bpe)
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return tok


def train_tokenizer(documents, vocab_size):
    tok = qwen2_byte_level(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 1,  # <|endoftext|> comes last, as Qwen's special tokens do
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(documents, trainer=trainer)
    tok.add_special_tokens([AddedToken(EOT, special=True, normalized=False, lstrip=False, rstrip=False)])
    return tok


def tokenizer_from(path):
    """The tokenizer train_tokenizer would make, with the vocabulary and merges of a JSON file
    ({"tokens": [...], "merges": ["a b", ...]}, e.g. the built-in model's, written by
    examples/speculative-pair/vocab-from-gguf.mjs); its last token is <|endoftext|>."""
    data = json.load(open(path, encoding="utf-8"))
    tokens, merges = data["tokens"], data["merges"]
    assert tokens[-1] == EOT, f"{path}: the last token is {tokens[-1]!r}, not {EOT}"
    vocab = {t: i for i, t in enumerate(tokens[:-1])}
    assert len(vocab) == len(tokens) - 1, f"{path}: repeated token texts"
    tok = qwen2_byte_level(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges], unk_token=None,
                                      fuse_unk=False, byte_fallback=False))
    tok.add_special_tokens([AddedToken(EOT, special=True, normalized=False, lstrip=False, rstrip=False)])
    assert tok.token_to_id(EOT) == len(tokens) - 1
    return tok


def save_tokenizer(tok, out, max_len):
    tok.save(os.path.join(out, "tokenizer.json"))
    eot = tok.token_to_id(EOT)
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": {
            str(eot): {
                "content": EOT,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
        },
        "bos_token": EOT,
        "eos_token": EOT,
        "pad_token": EOT,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_len,
        "errors": "replace",
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def encode_documents(tok, documents, eot):
    ids = []
    for enc in tok.encode_batch(documents, add_special_tokens=False):
        ids.append(eot)
        ids.extend(enc.ids)
    ids.append(eot)
    return torch.tensor(ids, dtype=torch.long)


def make_config(args, vocab_size, eot):
    return transformers.Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.head_dim,
        max_position_embeddings=args.max_pos,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        hidden_act="silu",
        attention_bias=False,
        attention_dropout=0.0,
        use_sliding_window=False,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        torch_dtype="float32",
    )


class CopyRows:
    """Turns a fraction of each batch's rows into copy examples: the row's text up to a random
    point, the separator, then the text from a random earlier point of the row repeated token for
    token to the row's end. A model trained on them learns to continue a passage it has seen
    in its context (induction heads), as in "rewrite this text" tasks, so that drafts taken from
    the prompt (n-gram lookup) or by a draft model trained the same way are accepted."""

    def __init__(self, fraction, sep, seq_len, device):
        self.fraction, self.sep, self.n, self.device = fraction, torch.tensor(sep, dtype=torch.long), seq_len + 1, device

    def apply(self, chunk, gen):
        rows = int(round(chunk.size(0) * self.fraction))
        if rows == 0:
            return chunk
        chunk = chunk.clone()
        s = self.sep.numel()
        for r in range(rows):
            # the second copy starts at `at` (after the separator) and repeats the text from `src`
            at = int(torch.randint(self.n // 4, self.n * 3 // 4, (1,), generator=gen))
            src = int(torch.randint(0, at - s - 16, (1,), generator=gen))
            row = chunk[r].cpu()
            row[at - s : at] = self.sep
            # token for token from src, so a copy that reaches its own start goes on with the
            # separator and the passage again: the row from `at` repeats row[src:at]
            length = self.n - at
            period = row[src:at].clone()
            row[at:] = period.repeat(length // period.numel() + 1)[:length]
            chunk[r] = row.to(self.device)
        return chunk


@torch.no_grad()
def copy_accuracy(model, val, sep, seq_len, device, rows=64):
    """Greedy next-token accuracy on held-out copy rows (CopyRows at every row), over the copied
    tokens after the first 8: the share of a copy that a model trained with copies reproduces."""
    gen = torch.Generator().manual_seed(7)
    starts = torch.randint(0, val.numel() - seq_len - 1, (rows,), generator=gen)
    chunk = torch.stack([val[s : s + seq_len + 1] for s in starts.tolist()])
    hits = total = 0
    copier = CopyRows(1.0, sep, seq_len, "cpu")
    for r in range(rows):
        g = torch.Generator().manual_seed(100 + r)
        at = int(torch.randint(copier.n // 4, copier.n * 3 // 4, (1,), generator=g))
        g = torch.Generator().manual_seed(100 + r)
        row = copier.apply(chunk[r : r + 1], g)[0].to(device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            pred = model(input_ids=row[None, :-1]).logits[0].argmax(-1)
        hits += int((pred[at + 7 :] == row[at + 8 :]).sum())
        total += row.numel() - at - 8
    return hits / max(1, total)


@torch.no_grad()
def evaluate(model, val, seq_len, device):
    model.eval()
    n = (val.numel() - 1) // seq_len
    x = val[: n * seq_len].view(n, seq_len).to(device)
    y = val[1 : n * seq_len + 1].view(n, seq_len).to(device)
    total = 0.0
    for i in range(0, n, 64):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x[i : i + 64]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.float().view(-1, logits.size(-1)), y[i : i + 64].reshape(-1), reduction="sum"
        )
        total += loss.item()
    model.train()
    return total / (n * seq_len)


def train_run(args, config, init_state, train, val, steps, device, deadline):
    """Trains one schedule of `steps` steps from init_state; returns (best val, state, curve)."""
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = transformers.Qwen3ForCausalLM(config).to(device)
    model.load_state_dict(init_state)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        eps=1e-8,
        fused=True,
    )
    warmup = min(args.warmup, steps // 10)

    def lr_at(step):
        if step < warmup:
            return args.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress))

    best = (float("inf"), None, -1)
    curve = []
    train_gpu = train.to(device)
    copies = CopyRows(args.copy_fraction, args.copy_sep, args.seq_len, device) if args.copy_fraction > 0 else None
    t0 = time.time()
    running = 0.0
    eval_every = max(50, steps // 20)
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        starts = torch.randint(0, train.numel() - args.seq_len - 1, (args.batch,), generator=gen).to(device)
        idx = starts[:, None] + torch.arange(args.seq_len + 1, device=device)[None, :]
        chunk = train_gpu[idx]
        if copies is not None:
            chunk = copies.apply(chunk, gen)
        x, y = chunk[:, :-1], chunk[:, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running += loss.item()
        last = step == steps - 1
        if (step + 1) % eval_every == 0 or last:
            v = evaluate(model, val, args.seq_len, device)
            tr = running / eval_every if not last else running / ((step % eval_every) + 1)
            running = 0.0
            curve.append({"step": step + 1, "train": round(tr, 4), "val": round(v, 4), "s": round(time.time() - t0, 1)})
            log(
                f"  step {step + 1:5d}/{steps}  lr {lr_at(step):.2e}  train {tr:.4f}  val {v:.4f}  "
                f"{time.time() - t0:6.1f}s"
            )
            if v < best[0]:
                best = (v, {k: t.detach().clone() for k, t in model.state_dict().items()}, step + 1)
        if time.time() > deadline:
            log(f"  time limit reached at step {step + 1}; stopping this run")
            v = evaluate(model, val, args.seq_len, device)
            if v < best[0]:
                best = (v, {k: t.detach().clone() for k, t in model.state_dict().items()}, step + 1)
            break
    return best, curve, time.time() - t0


def sample(model_dir, device, seed, log_fn):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).to(device).eval()
    log_fn(f"reloaded {type(model).__name__} and {type(tok).__name__} from {model_dir}")
    samples = []
    for i, prompt in enumerate(PROMPTS):
        ids = tok(prompt, return_tensors="pt").input_ids.to(device)
        with torch.no_grad():
            greedy = model.generate(ids, max_new_tokens=40, do_sample=False, pad_token_id=tok.eos_token_id)
            torch.manual_seed(seed + i)
            sampled = model.generate(
                ids,
                max_new_tokens=60,
                do_sample=True,
                temperature=0.8,
                top_k=40,
                top_p=1.0,
                pad_token_id=tok.eos_token_id,
            )
        g = tok.decode(greedy[0], skip_special_tokens=False)
        s = tok.decode(sampled[0], skip_special_tokens=False)
        log_fn(f"\nprompt: {prompt!r}\n  greedy : {g!r}\n  sampled: {s!r}")
        samples.append({"prompt": prompt, "prompt_ids": ids[0].tolist(), "greedy": g, "sampled": s,
                        "greedy_ids": greedy[0].tolist()})
    return samples


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--time-limit", type=float, default=420, help="seconds for all training runs")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--intermediate", type=int, default=768)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--max-pos", type=int, default=512)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--schedules", default="1000", help="steps of each run, comma-separated")
    p.add_argument("--copy-fraction", type=float, default=0.0,
                   help="share of each batch's rows made copy examples (see CopyRows); 0: none")
    p.add_argument("--copy-separator", default="\n\n", help="text between a passage and its copy")
    p.add_argument("--tokenizer-from", help="use this vocabulary (JSON of tokens and merges) instead of training one")
    args = p.parse_args()

    t_start = time.time()
    deadline_all = t_start + args.time_limit
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = "cuda"
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {__import__('tokenizers').__version__}, {torch.cuda.get_device_name(0)}")
    log("args:", json.dumps(vars(args)))
    os.makedirs(args.out, exist_ok=True)

    documents = read_documents(args.corpus)
    # Every 50th document is held out (10 of 500, spread over the corpus's categories).
    val_docs = documents[25::50]
    train_docs = [d for i, d in enumerate(documents) if i % 50 != 25]
    t = time.time()
    tok = tokenizer_from(args.tokenizer_from) if args.tokenizer_from else train_tokenizer(train_docs, args.vocab)
    eot = tok.token_to_id(EOT)
    vocab_size = tok.get_vocab_size()
    log(f"tokenizer: {vocab_size} tokens ({EOT} = {eot}), "
        + (f"from {args.tokenizer_from}" if args.tokenizer_from else f"trained in {time.time() - t:.1f}s"))
    assert vocab_size == args.vocab, vocab_size
    save_tokenizer(tok, args.out, args.max_pos)

    train = encode_documents(tok, train_docs, eot)
    val = encode_documents(tok, val_docs, eot)
    words = sum(len(d.split()) for d in train_docs)
    log(f"corpus: {len(train_docs)} train documents, {train.numel()} tokens ({train.numel() / words:.2f} per word); "
        f"{len(val_docs)} held-out documents, {val.numel()} tokens")
    log("tokenization of a sentence:", [tok.id_to_token(i) for i in tok.encode("The jury said, \"It isn't 1961.\"\n").ids])

    args.copy_sep = tok.encode(args.copy_separator, add_special_tokens=False).ids
    if args.copy_fraction > 0:
        log(f"copy examples: {args.copy_fraction:.0%} of each batch's rows, separator {args.copy_sep}")
    config = make_config(args, vocab_size, eot)
    torch.manual_seed(args.seed)
    init_model = transformers.Qwen3ForCausalLM(config)
    n_params = sum(p.numel() for p in init_model.parameters())
    log(f"model: Qwen3ForCausalLM, {n_params} parameters ({n_params / 1e6:.2f}M, embeddings tied)")
    init_state = {k: v.clone() for k, v in init_model.state_dict().items()}
    del init_model

    results = []
    best = None
    for steps in [int(s) for s in args.schedules.split(",")]:
        remaining = deadline_all - time.time()
        if remaining < 20:
            log(f"skipping the {steps}-step schedule: {remaining:.0f}s left")
            continue
        log(f"\nschedule of {steps} steps (batch {args.batch} x {args.seq_len} tokens, peak lr {args.lr})")
        (v, state, at), curve, secs = train_run(args, config, init_state, train, val, steps, device, deadline_all)
        log(f"schedule {steps}: best held-out loss {v:.4f} at step {at}, {secs:.1f}s")
        results.append({"steps": steps, "best_val": v, "best_step": at, "seconds": round(secs, 1), "curve": curve})
        if best is None or v < best[0]:
            best = (v, state, steps, at)
        torch.cuda.empty_cache()

    val_loss, state, steps, at = best
    log(f"\nbest: schedule of {steps} steps, held-out loss {val_loss:.4f} (perplexity {math.exp(val_loss):.1f}) "
        f"at step {at}")
    model = transformers.Qwen3ForCausalLM(config)
    model.load_state_dict({k: v.cpu() for k, v in state.items()})
    model = model.float()
    model.generation_config.bos_token_id = eot
    model.generation_config.eos_token_id = eot
    model.generation_config.pad_token_id = eot
    model.save_pretrained(args.out, safe_serialization=True)
    train_secs = sum(r["seconds"] for r in results)
    log(f"saved to {args.out}: " + ", ".join(f"{f} {os.path.getsize(os.path.join(args.out, f))}" for f in sorted(os.listdir(args.out))))

    copy_acc = copy_accuracy(model.to(device), val, args.copy_sep, args.seq_len, device)
    log(f"held-out copy accuracy (greedy, copied tokens after the first 8): {copy_acc:.3f}")
    samples = sample(args.out, device, args.seed, log)
    summary = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "tokenizers": __import__("tokenizers").__version__},
        "gpu": torch.cuda.get_device_name(0),
        "parameters": n_params,
        "vocab_size": vocab_size,
        "train_tokens": train.numel(),
        "val_tokens": val.numel(),
        "chosen_schedule": steps,
        "chosen_step": at,
        "val_loss": val_loss,
        "copy_accuracy": copy_acc,
        "training_seconds": round(train_secs, 1),
        "total_seconds": round(time.time() - t_start, 1),
        "runs": results,
        "samples": samples,
        "args": vars(args),
    }
    with open(os.path.join(os.path.dirname(os.path.abspath(args.out)), "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    log(f"\ntotal {time.time() - t_start:.1f}s (training {train_secs:.1f}s)")


if __name__ == "__main__":
    main()
