#!/usr/bin/env python3
"""table.py: the tables of README.md from results/*.json (spread.py --json)."""
import json
files = [l.split()[0].split("/")[-1] for l in open("files.txt")]
vs = ["native", "avx2", "nosimd", "thr1", "ub128", "ub32", "tok1", "nofa"]


def cell(s, over="over"):
    c = f"{s['worst']:.2f} ({s[over]})"
    if s.get("argmax_fail"):
        c += f" am{s['argmax_fail']}"
    return c


def load(v, n):
    return json.load(open(f"results/{v}.{n}.json"))


print("### All positions, teacher-forced (worst fraction of the tolerance (positions over 1); amN: argmax failures)\n")
print("| file | " + " | ".join(vs) + " |")
print("|---" * (len(vs) + 1) + "|")
for n in files + ["synth-llama-Q4_K_M.vs-regenerated"]:
    print(f"| {n} | " + " | ".join(cell(load(v, n)["summary_teacher_forced"]) for v in vs) + " |")

print("\n### Per case (prompt lengths): worst (positions over 1), teacher-forced\n")
print("| file | case | " + " | ".join(vs) + " |")
print("|---" * (len(vs) + 2) + "|")
for n in files:
    r0 = load("native", n)
    for ci, c in enumerate(r0["cases"]):
        cells = []
        for v in vs:
            rows = load(v, n)["cases"][ci]["rows"]
            w = max(rows, key=lambda x: x["ratio"])
            cells.append(f"{w['ratio']:.2f} ({sum(x['ratio'] > 1 for x in rows)})")
        print(f"| {n} | {ci} ({c['n_prompt']}+{c['n_gen']}) | " + " | ".join(cells) + " |")

print("\n### Free-running view (prompt positions + generated positions before the variant's own greedy departs)\n")
print("| file | " + " | ".join(vs) + " |")
print("|---" * (len(vs) + 1) + "|")
for n in files:
    cells = []
    for v in vs:
        r = load(v, n)
        c = cell(r["summary_free_running"])
        if any(d is not None for d in r["divergence"]):
            c += " div " + ",".join("-" if d is None else str(d) for d in r["divergence"])
        cells.append(c)
    print(f"| {n} | " + " | ".join(cells) + " |")

print("\n### MoE files with golden_test.cpp's router rule (reference's margins < 0.006 skipped, 1.5x after one):"
      " worst over compared positions (positions over their 1 / 1.5 slack), skipped\n")
print("| file | " + " | ".join(vs) + " |")
print("|---" * (len(vs) + 1) + "|")
for n in files:
    r = load("native", n)
    if "summary_router_rule" not in r:
        continue
    cells = []
    for v in vs:
        s = load(v, n)["summary_router_rule"]
        cells.append(f"{s['worst']:.2f} ({s['over_slack']}), {s['skipped']}/{s['skipped'] + s['n']} skipped"
                     + (f" am{s['argmax_fail']}" if s['argmax_fail'] else ""))
    print(f"| {n} | " + " | ".join(cells) + " |")
