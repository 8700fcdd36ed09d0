#!/usr/bin/env python3
"""spread.py REF.json RUN.json [--float] [--json OUT]: RUN's logits (golden_var, teacher-forced on REF's greedy,
--topk 0 = every logit) against a golden reference with ../shared/golden/README.md's rule: per position, per
reference pair (id, r) of `top` then `gen_top`, |o - r| <= abs + rel |r| (quantized 0.06 + 0.02|r|, --float
0.01 + 0.004|r|); the argmax must agree where the reference's top-1 leads its top-2 by more than twice the
tolerance (at r = top-1). Reports the worst position as a fraction of the tolerance, positions over 1, argmax
failures, and where RUN's own argmax first departs from REF's greedy (where a free-running greedy run would
diverge); `free` figures count only the positions a free-running run would have compared (prompt positions, and
generated positions before that divergence)."""
import argparse, gzip, json, sys


def load(path):
    return json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ref"); ap.add_argument("run")
    ap.add_argument("--float", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--margins", help="a golden_var --margins run of the reference: also apply golden_test.cpp's "
                    "router rule (positions with margin < 0.006 skipped, 1.5x the tolerance after one)")
    a = ap.parse_args()
    ref, run = load(a.ref), load(a.run)
    at, rt = (0.01, 0.004) if a.float else (0.06, 0.02)
    n_vocab = ref["n_vocab"]
    if run["n_vocab"] != n_vocab or len(ref["cases"]) != len(run["cases"]):
        sys.exit("shape mismatch")
    res = {"ref": a.ref, "run": a.run, "cases": []}
    margins = load(a.margins)["cases"] if a.margins else None
    for ci, (cr, co) in enumerate(zip(ref["cases"], run["cases"])):
        if cr["tokens"] != co["tokens"]:
            sys.exit(f"case {ci}: tokens differ")
        n = len(cr["tokens"]); ng = len(cr["gen_top"])
        if co["greedy"][:ng] != cr["greedy"][:ng]:
            sys.exit(f"case {ci}: RUN was not fed REF's greedy tokens")
        # first g where the run's own argmax (after position n-1+g) differs from the reference's greedy[g]
        div = next((g for g in range(min(ng, len(co["own_argmax"]))) if co["own_argmax"][g] != cr["greedy"][g]), None)
        rows = []
        slack = 1.0
        for p in range(n + ng):
            tie = margins is not None and margins[ci]["route_margin"][p] < 0.006
            if tie:
                slack = 1.5
            rp = cr["top"][p] if p < n else cr["gen_top"][p - n]
            op = co["top"][p] if p < n else co["gen_top"][p - n]
            if len(op) != n_vocab:
                sys.exit("RUN must hold every logit (--topk 0)")
            o = dict((i, l) for i, l in op)
            worst = max((abs(o[i] - r) / (at + rt * abs(r)), i, o[i], r) for i, r in rp)
            t1, t2 = rp[0][1], rp[1][1]
            run_arg = max(op, key=lambda x: x[1])[0]
            arg_rule = t1 - t2 > 2 * (at + rt * abs(t1))
            arg_fail = arg_rule and run_arg != rp[0][0]
            # free-running validity: gen position n+g follows greedy[0..g]; the run would have fed its own
            # argmax, equal to the reference's up to g iff div is None or div > g
            free_ok = p < n or div is None or div > (p - n)
            rows.append({"pos": p, "kind": "prompt" if p < n else "gen", "ratio": worst[0], "token": worst[1],
                         "run": worst[2], "ref": worst[3], "argmax_rule": arg_rule, "argmax_fail": arg_fail,
                         "free_ok": free_ok, "router_tie": tie, "slack": slack,
                         "argmax_fail_slack": (t1 - t2 > 2 * slack * (at + rt * abs(t1))) and run_arg != rp[0][0]})
        res["cases"].append({"case": ci, "n_prompt": n, "n_gen": ng, "free_divergence_gen_index": div, "rows": rows})

    def summary(rows):
        if not rows:
            return {"worst": 0.0, "over": 0, "argmax_fail": 0, "n": 0}
        w = max(rows, key=lambda r: r["ratio"])
        return {"worst": w["ratio"], "worst_at": (w["case"], w["kind"], w["pos"]), "n": len(rows),
                "over": sum(r["ratio"] > 1 for r in rows), "argmax_fail": sum(r["argmax_fail"] for r in rows),
                "over_at": [(r["case"], r["kind"], r["pos"], round(r["ratio"], 3)) for r in rows if r["ratio"] > 1]}
    allrows = [dict(r, case=c["case"]) for c in res["cases"] for r in c["rows"]]
    res["summary_teacher_forced"] = summary(allrows)
    res["summary_free_running"] = summary([r for r in allrows if r["free_ok"]])
    if margins is not None:
        kept = [r for r in allrows if not r["router_tie"]]
        s = summary(kept)
        s["skipped"] = len(allrows) - len(kept)
        s["over_slack"] = sum(r["ratio"] > r["slack"] for r in kept)
        s["argmax_fail"] = sum(r["argmax_fail_slack"] for r in kept)
        res["summary_router_rule"] = s
    res["divergence"] = [c["free_divergence_gen_index"] for c in res["cases"]]
    for k in ("summary_teacher_forced", "summary_free_running", "summary_router_rule"):
        if k not in res:
            continue
        s = res[k]
        if "skipped" in s:
            print(f"  router rule: {s['skipped']} near-tie positions skipped, {s['over_slack']} over their slack (1 or 1.5)")
        print(f"{k}: worst {s['worst']:.3f} at {s.get('worst_at')}, {s['over']} of {s['n']} positions over 1, "
              f"argmax failures {s['argmax_fail']}")
        if s["over"]:
            print("  over 1 (case, kind, position, ratio):", s["over_at"][:40], "..." if s["over"] > 40 else "")
    print("free-running divergence (generated index per case, None = none):", res["divergence"])
    if a.json:
        json.dump(res, open(a.json, "w"))


if __name__ == "__main__":
    main()
