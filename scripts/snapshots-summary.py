#!/usr/bin/python3
"""snapshots-summary.py - the tables and goal checks of a snapshot benchmark
run (scripts/bench-snapshots.sh; docs/performance.md, "Snapshots").

    snapshots-summary.py RUNS.jsonl OUTDIR

RUNS.jsonl: the cow_snapbench --json lines of one session (every method and
write fraction, each repeated SNAP_REPS times), and optionally cow_bench's
snapshot group in OUTDIR/take.jsonl. Writes OUTDIR/summary.md (markdown, the
figures docs/performance.md quotes) and OUTDIR/summary.tsv (for
scripts/plot-snapshots.sh), and prints summary.md. Each figure is the median
over the repetitions; "lo-hi" gives their range where there are several.
"""
import json
import os
import statistics
import sys

SAVES = ["cow-stream", "cow-persist-first", "eager", "eager-pre", "fork"]
COW = ["cow-stream", "cow-persist-first"]
LABEL = {
    "cow-stream": "(a) cowstore snapshot, stream",
    "eager": "(b) eager staging, fresh buffers",
    "eager-pre": "(b') eager staging, kept buffers",
    "fork": "(c) fork(), child saves",
    "cow-persist-first": "(d) cowstore snapshot, persist first",
}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs, fmt):
    if len(xs) < 2:
        return fmt(med(xs))
    return "%s (%s-%s)" % (fmt(med(xs)), fmt(min(xs)), fmt(max(xs)))


def us(ns):
    return "%.1f µs" % (ns / 1e3) if ns < 1e6 else "%.2f ms" % (ns / 1e6)


def ms(ns):
    return "%.2f" % (ns / 1e6)


def ratio(x):
    return "%.3fx" % x


def write_summary(out, lines, tsv):
    """OUTDIR/summary.md from @lines, OUTDIR/summary.tsv from @tsv; prints
    summary.md (files-summary.py uses it too)."""
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "summary.tsv"), "w") as f:
        f.write("\n".join(tsv) + "\n")
    sys.stdout.write(text)


def main():
    runs_path, out = sys.argv[1], sys.argv[2]
    runs = [json.loads(l) for l in open(runs_path) if l.strip()]
    by = {}
    for r in runs:
        by.setdefault((r["method"], r["write_pct"]), []).append(r)
    pcts = sorted({r["write_pct"] for r in runs if r["method"] in SAVES})
    state = runs[0]["state_bytes"]
    plain = [r["save_gb_per_s"] for r in by.get(("plain", 0), [])]
    busy = [r["save_gb_per_s"] for r in by.get(("plain-busy", 0), [])]
    plain_gbs = med(plain)
    lines = []
    w = lines.append

    def col(m, p, key, f=lambda x: x):
        return [f(r[key]) for r in by.get((m, p), [])]

    w("State: %d float32 tensors, %s, %.0f MiB; %d repetition(s) per "
      "configuration; figures are medians (lo-hi over the repetitions)."
      % (runs[0]["tensors"], runs[0]["shape"], state / 2**20,
         max(len(v) for k, v in by.items() if k[0] in SAVES)))
    w("")
    w("Plain sequential write of the state (no writer running): %s GB/s "
      "over %d runs; the same with the writers running steps that write "
      "no tensor (plain-busy): %s GB/s over %d runs."
      % (spread(plain, lambda x: "%.2f" % x), len(plain),
         spread(busy, lambda x: "%.2f" % x), len(busy)))
    w("")
    w("| method | written | stall | step p50 / p99 / max during the save "
      "(ms) | without saving (ms) | steps | writers' time lost (ms) | "
      "extra memory (peak Pss) | snapshot extra_peak | save wall time "
      "(ms) | throughput / plain | / plain-busy |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    # stall_ns: the stall and the save's start where the writers wait for
    # it (cow-persist-first).
    tsv = ["method\tpct\tstall_ns\tsave_p50_ns\tsave_p99_ns\tsave_max_ns"
           "\tbase_p50_ns\tbase_p99_ns\tlost_ns\textra_ratio"
           "\tsnap_extra_ratio\tsave_ns\tthroughput_ratio"]
    for p in pcts:
        for m in SAVES:
            rs = by.get((m, p), [])
            if not rs:
                continue
            tput = [x / plain_gbs for x in col(m, p, "save_gb_per_s")]
            tbusy = [x / med(busy) for x in col(m, p, "save_gb_per_s")]
            stall = [a + b for a, b in zip(col(m, p, "stall_ns"),
                                           col(m, p, "start_ns"))]
            stall_text = spread(col(m, p, "stall_ns"), us)
            if any(col(m, p, "start_ns")):
                stall_text += " + start %s" % us(med(col(m, p, "start_ns")))
            snap = ([x / state for x in col(m, p, "snap_extra_peak_bytes")]
                    if m in COW else [])
            w("| %s | %d%% | %s | %s / %s / %s | %s / %s / %s | %d | %s | %s "
              "| %s | %s | %s | %s |" % (
                  LABEL[m], p, stall_text,
                  ms(med(col(m, p, "save_p50_ns"))),
                  ms(med(col(m, p, "save_p99_ns"))),
                  ms(med(col(m, p, "save_max_ns"))),
                  ms(med(col(m, p, "base_p50_ns"))),
                  ms(med(col(m, p, "base_p99_ns"))),
                  ms(med(col(m, p, "base_max_ns"))),
                  med(col(m, p, "save_steps")),
                  spread(col(m, p, "lost_ns"), ms),
                  spread(col(m, p, "extra_ratio"), ratio),
                  spread(snap, ratio) if snap else "",
                  spread(col(m, p, "save_ns"), ms),
                  spread(tput, lambda x: "%.2f" % x),
                  "%.2f" % med(tbusy) if busy else ""))
            tsv.append("\t".join(str(v) for v in [
                m, p, med(stall),
                med(col(m, p, "save_p50_ns")), med(col(m, p, "save_p99_ns")),
                med(col(m, p, "save_max_ns")), med(col(m, p, "base_p50_ns")),
                med(col(m, p, "base_p99_ns")), med(col(m, p, "lost_ns")),
                med(col(m, p, "extra_ratio")), med(snap) if snap else "nan",
                med(col(m, p, "save_ns")), med(tput)]))
    w("")

    # The goals (issue 37), each checked at every write fraction measured.
    def goal(text, ok, measured):
        w("| %s | %s | %s |" % (text, measured, "yes" if ok else "**no**"))

    w("| goal | measured | met |")
    w("|---|---|---|")
    take = os.path.join(out, "take.jsonl")
    for m in COW:
        st = [s for p in pcts for s in col(m, p, "stall_ns")]
        sv = [s for p in pcts for s in col(m, p, "start_ns")]
        if st:
            goal("%s: stall (cow_snapshot_take) at most 50 µs for %d "
                 "tensors (every run)" % (m, runs[0]["tensors"]),
                 max(st) <= 50e3, "%s-%s, median %s%s" % (
                     us(min(st)), us(max(st)), us(med(st)),
                     "; the save's start, which the writers also wait "
                     "for: median %s" % us(med(sv)) if any(sv) else ""))
    if os.path.exists(take):
        for l in open(take):
            r = json.loads(l)
            if r["bench"].startswith("snapshot_take_256"):
                goal("cow_bench %s (%d MiB in all; median of batches)"
                     % (r["bench"], r["bytes"] >> 20),
                     r["ns_per_op"] <= 50e3, "%s (p10-p90 %s-%s)" % (
                         us(r["ns_per_op"]), us(r["p10"]), us(r["p90"])))
    for m in COW:
        for e in ("eager", "eager-pre"):
            st = [s for p in pcts for s in col(m, p, "stall_ns")]
            se = [s for p in pcts for s in col(e, p, "stall_ns")]
            if st and se:
                goal("%s stall under 1/1000 of %s's" % (m, e),
                     med(st) * 1000 < med(se), "1/%.0f (%s against %s)" % (
                         med(se) / med(st), us(med(st)), us(med(se))))
    if ("cow-stream", 10) in by:
        x = med(col("cow-stream", 10, "extra_ratio"))
        goal("cow-stream: extra memory at 10% written at most 0.15x", x <= 0.15,
             ratio(x))
    xs = [(p, med(col("cow-stream", p, "extra_ratio"))) for p in pcts
          if ("cow-stream", p) in by]
    if xs:
        goal("cow-stream: extra memory never above 1.0x",
             all(x <= 1.0 for _, x in xs),
             ", ".join("%d%%: %s" % (p, ratio(x)) for p, x in xs))
    xs = [(p, max(col("cow-persist-first", p, "extra_ratio"))) for p in pcts
          if ("cow-persist-first", p) in by]
    if xs:
        goal("cow-persist-first: extra memory at most 0.02x at every "
             "fraction (largest run)", all(x <= 0.02 for _, x in xs),
             ", ".join("%d%%: %s" % (p, ratio(x)) for p, x in xs))
    for m in COW:
        xs = [(p, med(col(m, p, "save_gb_per_s")) / plain_gbs) for p in pcts
              if (m, p) in by]
        if xs:
            goal("%s: throughput at least 0.8x the plain write" % m,
                 all(x >= 0.8 for _, x in xs),
                 ", ".join("%d%%: %.2f" % (p, x) for p, x in xs))
    for m in COW:
        for e in ("eager", "eager-pre"):
            xs = [(p, med(col(m, p, "lost_ns")), med(col(e, p, "lost_ns")))
                  for p in pcts if (m, p) in by and (e, p) in by]
            if xs:
                goal("%s: writers' time lost below %s's at every fraction"
                     % (m, e), all(a < b for _, a, b in xs),
                     ", ".join("%d%%: %s vs %s ms" % (p, ms(a), ms(b))
                               for p, a, b in xs))
    write_summary(out, lines, tsv)


if __name__ == "__main__":
    main()
