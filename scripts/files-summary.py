#!/usr/bin/python3
"""files-summary.py - the tables and goal checks of a file benchmark run
(scripts/bench-files.sh; docs/performance.md, "Files").

    files-summary.py RUNS.jsonl LOADS.jsonl OUTDIR

RUNS.jsonl: the save lines of one session (cow_snapbench --json and
filebench.py save); LOADS.jsonl: the load lines (cow_stload --json and
filebench.py load). Writes OUTDIR/summary.md (markdown, the figures
docs/performance.md quotes) and OUTDIR/summary.tsv, and prints summary.md.
Each figure is the median over the repetitions; "lo-hi" gives their range
where there are several.
"""
import importlib.util
import json
import os
import sys

_spec = importlib.util.spec_from_file_location(
    "snapshots_summary",
    os.path.join(os.path.dirname(os.path.abspath(__file__)),
                 "snapshots-summary.py"))
_snap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_snap)
med, spread, us, ms, ratio = (_snap.med, _snap.spread, _snap.us, _snap.ms,
                              _snap.ratio)

# Saves in table order; synchronous ones block the caller for the whole
# save (their stall is the save's wall time).
SAVES = [
    ("plain", "plain sequential write (reference, no writer)", True),
    ("plain-busy", "plain write beside the writers (reference)", True),
    ("st-alone", "cowstore safetensors, caller's thread, no writer", True),
    ("st-stream", "cowstore safetensors job, stream, writers running",
     False),
    ("st-persist-first",
     "cowstore safetensors job, persist first, writers running", False),
    ("np-save", "`np.save` of each tensor (256 .npy files)", True),
    ("np-savez", "`np.savez` of all (one .npz)", True),
    ("torch-save", "`torch.save` of a dict (one .pt)", True),
    ("py-save-file", "`cowstore.save_file` (Python)", True),
    ("py-snapshot", "`cowstore.snapshot(...).save(...)` (Python)", False),
]
LOADS = [
    ("cow-mmap", "cowstore `cow_safetensors_open`, mapped"),
    ("cow-pread", "cowstore `cow_safetensors_open`, `COW_SAFETENSORS_PREAD`"),
    ("np-mmap", "`np.load(mmap_mode=\"r\")` of each .npy"),
    ("npz", "`np.load` of the .npz"),
    ("torch", "`torch.load` of the .pt"),
    ("np-fromfile", "`np.fromfile` of the safetensors data"),
    ("py-safe-open", "`cowstore.safe_open` (Python)"),
]
OPEN_GOAL_NS = 5e6
OPEN_GOAL_ANON = 1 << 20
SAVE_GOAL = 0.8


def mib(b):
    return "%.2f MiB" % (b / 2**20) if abs(b) >= 2**20 else "%.0f KiB" % (
        b / 1024)


def main():
    runs_path, loads_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = [json.loads(l) for l in open(runs_path) if l.strip()]
    loads = [json.loads(l) for l in open(loads_path) if l.strip()]
    state_n = 256
    saves = {}
    for r in runs:
        if r["tensors"] == state_n:
            saves.setdefault((r["method"], r["write_pct"]), []).append(r)
    state = next(r["state_bytes"] for r in runs if r["tensors"] == state_n)
    lines, tsv = [], []
    w = lines.append

    def col(rows, key, f=lambda x: x):
        return [f(r[key]) for r in rows]

    plain = med(col(saves.get(("plain", 0), []), "save_gb_per_s"))
    busy = med(col(saves.get(("plain-busy", 0), []), "save_gb_per_s"))
    # The references run once more at the end: count the others.
    reps = max(len(v) for k, v in saves.items()
               if k[0] not in ("plain", "plain-busy"))
    w("State: %d float32 tensors, %.0f MiB; %d repetition(s) per "
      "configuration; figures are medians (lo-hi over the repetitions). "
      "Every file was checked against the state: %s."
      % (state_n, state / 2**20, reps,
         "all %d saves and %d loads verify ok" % (len(runs), len(loads))
         if all(r["verify"] == "ok" for r in runs + loads) else
         "**%d saves and %d loads FAILED**" % (
             sum(r["verify"] != "ok" for r in runs),
             sum(r["verify"] != "ok" for r in loads))))
    w("")
    w("### Saving")
    w("")
    w("| method | written | writers' stall | save wall time (ms) | GB/s | "
      "/ plain | / plain-busy | extra memory | snapshot extra_peak | "
      "writers' copies / persists | file bytes |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    tsv.append("\t".join(["kind", "method", "write_pct", "stall_ns",
                          "save_ns", "gb_per_s", "per_plain", "extra_ratio"]))
    for m, label, sync in SAVES:
        for p in sorted({k[1] for k in saves if k[0] == m}):
            rows = saves[(m, p)]
            gbs = col(rows, "save_gb_per_s")
            if sync:
                stall = col(rows, "save_ns")
                stall_s = "the whole save" if m not in (
                    "plain", "plain-busy") else "-"
            else:
                stall = [r["stall_ns"] + r.get("start_ns", 0) for r in rows]
                stall_s = spread(stall, us)
                if any(r.get("start_ns") for r in rows):
                    stall_s += " (take %s + start %s)" % (
                        us(med(col(rows, "stall_ns"))),
                        us(med(col(rows, "start_ns"))))
            extra = col(rows, "extra_ratio")
            snap = col(rows, "snap_extra_peak_bytes") if all(
                "snap_extra_peak_bytes" in r for r in rows) else []
            cp = ["%d / %d" % (r["snap_writer_copies"],
                               r["snap_writer_persists"])
                  for r in rows if "snap_writer_copies" in r]
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                label, "%d%%" % p if m.startswith("st-") and not sync
                else "-", stall_s,
                spread(col(rows, "save_ns"), ms),
                spread(gbs, lambda x: "%.2f" % x),
                ratio(med(gbs) / plain), ratio(med(gbs) / busy),
                "%s (%s)" % (spread(extra, ratio),
                             mib(med(col(rows, "extra_bytes")))),
                spread([x / state for x in snap], ratio) if snap else "",
                ", ".join(cp) if not sync else "",
                "%d" % med(col(rows, "file_bytes")) if all(
                    "file_bytes" in r for r in rows) else ""))
            tsv.append("\t".join(str(x) for x in [
                "save", m, p, med(stall), med(col(rows, "save_ns")),
                med(gbs), med(gbs) / plain, med(extra)]))
    w("")
    w("Extra memory: for the saves beside the writers, the peak RssAnon "
      "during the save (sampled every 5 ms) less the same after the "
      "writers' warm-up; for the synchronous ones (plain, st-alone and "
      "filebench.py's), the peak resident set during the save (VmHWM, "
      "reset just before it) less the resident set before. The file's "
      "page cache is in neither. The references run once more after the "
      "last repetition.")
    w("")

    byl = {}
    for r in loads:
        byl.setdefault((r["method"], r["tensors"]), []).append(r)
    w("### Loading (warm: the file read just before, in the page cache)")
    w("")
    w("| method | tensors | open and index | new anonymous memory at open "
      "| first tensor, summed | all tensors summed | anonymous memory for "
      "all | open again (set-up done) | anonymous memory of the second "
      "handle |")
    w("|---|---|---|---|---|---|---|---|---|")
    tsv.append("\t".join(["kind", "method", "tensors", "open_ns",
                          "open_anon_bytes", "first_ns", "all_ns",
                          "all_anon_bytes", "reopen_ns"]))
    for m, label in LOADS:
        for n in sorted({k[1] for k in byl if k[0] == m}):
            rows = byl[(m, n)]
            w("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                label, n, spread(col(rows, "open_ns"), us),
                spread(col(rows, "open_anon_bytes"), mib),
                spread(col(rows, "first_ns"), us),
                spread(col(rows, "all_ns"), us),
                spread([r["first_anon_bytes"] + r["all_anon_bytes"]
                        for r in rows], mib),
                spread(col(rows, "reopen_ns"), us),
                spread(col(rows, "reopen_anon_bytes"), mib)))
            tsv.append("\t".join(str(x) for x in [
                "load", m, n, med(col(rows, "open_ns")),
                med(col(rows, "open_anon_bytes")),
                med(col(rows, "first_ns")), med(col(rows, "all_ns")),
                med([r["first_anon_bytes"] + r["all_anon_bytes"]
                     for r in rows]), med(col(rows, "reopen_ns"))]))
    w("")

    w("### Goals")
    w("")
    w("| goal | measured | met |")
    w("|---|---|---|")

    def goal(what, ok, figures):
        w("| %s | %s | %s |" % (what, figures, "yes" if ok else "**no**"))

    for m in ("cow-mmap", "cow-pread"):
        rows = byl.get((m, 1000), [])
        if rows:
            t = max(col(rows, "open_ns"))
            a = max(col(rows, "open_anon_bytes"))
            goal("%s: open and index of a 1,000-tensor file at most 5 ms "
                 "warm, at most 1 MiB new anonymous memory (slowest and "
                 "largest of the runs)" % m,
                 t <= OPEN_GOAL_NS and a <= OPEN_GOAL_ANON,
                 "%s, %s (median %s; open again: %s)" % (
                     us(t), mib(a), us(med(col(rows, "open_ns"))),
                     us(med(col(rows, "reopen_ns")))))
    for m, _, _ in SAVES:
        if not (m.startswith("st-") or m.startswith("py-")):
            continue
        for p in sorted({k[1] for k in saves if k[0] == m}):
            x = med(col(saves[(m, p)], "save_gb_per_s"))
            goal("%s%s: save throughput at least 0.8x the plain write"
                 % (m, "" if m in ("st-alone",) or m.startswith("py-")
                    else " at %d%%" % p),
                 x / plain >= SAVE_GOAL,
                 "%.2fx plain (%.2f of %.2f GB/s); %.2fx plain-busy"
                 % (x / plain, x, plain, x / busy))

    _snap.write_summary(out, lines, tsv)


if __name__ == "__main__":
    main()
