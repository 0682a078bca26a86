#!/usr/bin/env python3
"""Make the expected chat-template renderings that src/chat-template.test.ts compares against.

Usage (from the repository root):
    python3 packages/tokenizer/test/templates/render.py ../shared/fixtures

Renders every `<fixtures>/templates/*.jinja` with every conversation of conversations.json the way
Hugging Face transformers' `apply_chat_template` does, written here from its documented behaviour
(no code copied): a Jinja2 ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
loopcontrols extension, a `tojson` filter that is `json.dumps` with ensure_ascii=False, and the
globals `raise_exception` and `strftime_now`. The render variables are `messages`, `tools` (only
when the conversation has tools), `add_generation_prompt`, `bos_token`, `eos_token` and the
conversation's extra kwargs.

Output: `expected/<template stem>/<conversation>.txt` with the rendering, or
`expected/<template stem>/<conversation>.error.txt` holding `<ExceptionClass>: <message>` when
rendering raised. The output is deterministic: `strftime_now` uses the fixed date of
conversations.json, and the expected folder is rebuilt from scratch on every run.

Needs only python3 and jinja2 (3.1.x); no network.
"""

import json
import shutil
import sys
from datetime import datetime
from pathlib import Path

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = Path(__file__).resolve().parent


def make_environment(now: datetime) -> ImmutableSandboxedEnvironment:
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        # Jinja2's own tojson HTML-escapes and sorts keys; transformers replaces it with plain json.dumps.
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        # transformers uses datetime.now(); a fixed date keeps the expected files stable.
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def special_tokens(spec: dict, stem: str) -> dict:
    # First entry whose prefix starts the template's file stem; the last entry has prefix "".
    for entry in spec["specialTokens"]:
        if stem.startswith(entry["prefix"]):
            return entry
    raise SystemExit(f"no special tokens for {stem}")


def render(env, source: str, conversation: dict, tokens: dict) -> str:
    template = env.from_string(source)
    variables = {
        "messages": conversation["messages"],
        "add_generation_prompt": conversation.get("addGenerationPrompt", True),
        "bos_token": tokens["bos"],
        "eos_token": tokens["eos"],
    }
    if "tools" in conversation:
        variables["tools"] = conversation["tools"]
    variables.update(conversation.get("kwargs", {}))
    return template.render(**variables)


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: render.py <fixtures dir>")
    templates_dir = Path(sys.argv[1]) / "templates"
    spec = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
    env = make_environment(datetime.fromisoformat(spec["now"]))
    out_root = HERE / "expected"
    if out_root.exists():
        shutil.rmtree(out_root)
    counts = {"ok": 0, "error": 0}
    for path in sorted(templates_dir.glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        tokens = special_tokens(spec, path.stem)
        out_dir = out_root / path.stem
        out_dir.mkdir(parents=True)
        for conversation in spec["conversations"]:
            # Each render gets its own deep copy so nothing leaks between conversations.
            conversation = json.loads(json.dumps(conversation))
            name = conversation["name"]
            try:
                text = render(env, source, conversation, tokens)
            except Exception as error:  # noqa: BLE001 - any failure is an expected outcome
                (out_dir / f"{name}.error.txt").write_bytes(f"{type(error).__name__}: {error}".encode("utf-8"))
                counts["error"] += 1
                continue
            (out_dir / f"{name}.txt").write_bytes(text.encode("utf-8"))
            counts["ok"] += 1
    print(f"jinja2 {jinja2.__version__}: {counts['ok']} renderings, {counts['error']} errors -> {out_root}")


if __name__ == "__main__":
    main()
