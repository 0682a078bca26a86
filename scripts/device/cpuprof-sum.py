#!/usr/bin/env python3
# Sums a V8 CPU profile (node --cpu-prof) by function: self and inclusive milliseconds, the
# largest first, module loading left out. Used to find the JavaScript of a decode step.
#   python3 cpuprof-sum.py FILE.cpuprofile [TOP]
import collections
import json
import sys

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 60
p = json.load(open(path))
nodes = {n["id"]: n for n in p["nodes"]}
parent = {c: n["id"] for n in p["nodes"] for c in n.get("children", [])}
per_node = collections.Counter()
for s, d in zip(p["samples"], p["timeDeltas"]):
    per_node[s] += d


def key(n):
    cf = n["callFrame"]
    url = "/".join(cf["url"].split("/")[-4:])
    return f"{cf['functionName'] or '(anon)'} {url}:{cf['lineNumber']}"


skip = ("loader", "translators", "realm", "module_job", "package_json", "node:internal/modules")
self_ms = collections.Counter()
incl_ms = collections.Counter()
for nid, t in per_node.items():
    self_ms[key(nodes[nid])] += t
    seen = set()
    x = nid
    while x is not None:
        k = key(nodes[x])
        if k not in seen:
            incl_ms[k] += t
            seen.add(k)
        x = parent.get(x)
print(f"total {sum(per_node.values()) / 1000:.1f} ms")
for title, c in (("self", self_ms), ("inclusive", incl_ms)):
    print(f"--- {title} (ms)")
    shown = 0
    for k, t in c.most_common():
        if any(s in k for s in skip):
            continue
        print(f"{t / 1000:10.1f}  {k}")
        shown += 1
        if shown >= top:
            break
