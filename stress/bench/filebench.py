#!/usr/bin/python3
"""filebench.py - the NumPy and PyTorch side of the file benchmark
(docs/performance.md, "Files"; scripts/bench-files.sh runs every
configuration back to back, beside cow_snapbench's st- saves and
cow_stload's loads).

    filebench.py save --method M --state SIZE [--tensors N] [--dir DIR]
                      [--keep]
    filebench.py load --method M --path PATH

Run it with Debian's /usr/bin/python3 (numpy 1.24, torch 1.13). One
invocation, one measurement, in a fresh process; one JSON line on stdout,
with the field names of cow_snapbench --json (save) and cow_stload --json
(load).

The state is cow_snapbench's (its --shape equal): N float32 tensors
(default 256) named t0000, t0001, ..., of equal sizes totalling SIZE bytes
(the last takes the remainder); tensor i's element j is
float((i * 131 + j) & 4095) (bench_state_value in bench.h).

save: the state is built, the method runs once on a tiny state (imports and
first-call set-up out of the clock), then once on the state, timed from the
call to the end of the last fsync (the files and their directory: durable,
as cow_snapbench's saves). The caller is blocked for all of it, so the
writers' stall is the whole save (stall_ns = save_ns). Peak extra memory is
the peak resident set during the save (VmHWM, reset just before it through
/proc/self/clear_refs) less the resident set before; nothing is mapped
from a file while these save, so it is anonymous memory (plus the few code
pages a call may touch). Then, outside the clock, the file is read back
and every element compared with the state; a difference fails the run
(exit 3). Methods and their files in DIR:

  np-save     np.save of each tensor into filebench-npy/tNNNN.npy, one file
              each, all written, then each fsynced, then the directory
  np-savez    np.savez of all into filebench.npz (a zip, stored, with a
              CRC-32 of each member)
  torch-save  torch.save of a dict of torch tensors (torch.from_numpy: no
              copy) into filebench.pt
  py-save-file, py-snapshot
              HOOK for cowstore's own Python bindings (issue 38:
              cowstore.save_file, and cowstore.snapshot(...).save(...).wait()
              on tensors cowstore owns, made with cowstore.tensor before
              the save: an engine's state; tensors cowstore.asarray wraps
              around NumPy's memory are pinned, and a snapshot copies them
              at the take, docs/snapshots.md) into filebench.safetensors. They need a cowstore module
              that has them on PYTHONPATH; without one they exit 4 and say
              so (bench-files.sh skips them then). py-snapshot's stall is
              the time until save() returns (the take and the start), its
              wall time the time until wait() returns.

load: PATH is read as the method reads it, each phase timed on its own:
open (and index: the names and shapes known), the first tensor t0000 summed,
all tensors summed (each .sum(); the tensors held to the end), and again
the open and index (reopen, with first-call set-up done; then closed).
Anonymous memory (RssAnon) is read before the open and after each phase
(and around the reopen, with its handle open). Then, outside the
clocks, every element is compared with the state (exit 3 on a difference).

  np-mmap     PATH a directory of .npy files: np.load(mmap_mode="r") of each
  npz         np.load of the .npz (reads the zip's directory); each member
              read when indexed
  torch       torch.load of the .pt (reads everything)
  np-fromfile PATH a safetensors file: its header parsed here (struct, json:
              an independent reader of the format) for the offsets, then
              np.fromfile of the first tensor's bytes, and of all the data
              at once for the sums: a plain read of the same bytes into
              private memory
  py-safe-open
              HOOK: cowstore.safe_open(PATH) (keys(), get_tensor(name),
              .sum().item()); exit 4 without the bindings

Nothing here asserts a timing.
"""
import argparse
import gc
import json
import os
import shutil
import struct
import sys
import time

import numpy as np

SAVES = ["np-save", "np-savez", "torch-save", "py-save-file", "py-snapshot"]
LOADS = ["np-mmap", "npz", "torch", "np-fromfile", "py-safe-open"]
EXIT_NO_BINDINGS = 4


def now():
    return time.monotonic_ns()


def parse_size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:].lower())
    return int(s[:-1]) * mult if mult else int(s)


def name(i):
    return "t%04d" % i


def state_value(i, numel):
    """Tensor @i of the state, @numel elements."""
    return ((i * 131 + np.arange(numel, dtype=np.int64)) & 4095).astype(
        np.float32)


def make_state(state_bytes, n):
    elems = state_bytes // 4
    unit = elems // n
    if unit == 0:
        sys.exit("filebench.py: state too small for that many tensors")
    sizes = [unit] * (n - 1) + [elems - unit * (n - 1)]
    return {name(i): state_value(i, k) for i, k in enumerate(sizes)}


def bad_elements(tensor_name, arr):
    """Elements of @arr that differ from the state's tensor @tensor_name."""
    arr = np.asarray(arr).reshape(-1)
    try:
        i = int(tensor_name[1:]) if tensor_name[:1] == "t" else -1
    except ValueError:
        i = -1
    if i < 0 or arr.dtype != np.float32:
        print("verify: tensor %r is not one of the state's (tNNNN, float32)"
              % tensor_name, file=sys.stderr)
        return max(arr.size, 1)
    return int(np.count_nonzero(arr != state_value(i, arr.size)))


def proc_status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon"):
                out[key] = int(value.split()[0]) * 1024
    return out


def reset_peak():
    """VmHWM back to the current resident set (proc(5), clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_file(f):
    f.flush()
    os.fsync(f.fileno())


def need_bindings(*names):
    """The cowstore module, when it has the bindings @names; else exit 4."""
    try:
        import cowstore
    except ImportError as e:
        print("filebench.py: no cowstore module (%s): set PYTHONPATH to the "
              "release build's python/ folder" % e, file=sys.stderr)
        sys.exit(EXIT_NO_BINDINGS)
    missing = [n for n in names if not hasattr(cowstore, n)]
    if missing:
        print("filebench.py: this cowstore module has no %s (issue 38's "
              "Python bindings)" % ", ".join(missing), file=sys.stderr)
        sys.exit(EXIT_NO_BINDINGS)
    return cowstore


# ------------------------------------------------------------------ #
# The independent safetensors reader (the format's specification: an
# 8-byte little-endian header length N, N bytes of JSON, the data).

def st_header(path):
    """(data offset in the file, [(name, dtype, shape, begin, end)]) of the
    safetensors file @path, in data order."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    entries = [(k, v["dtype"], v["shape"], v["data_offsets"][0],
                v["data_offsets"][1])
               for k, v in header.items() if k != "__metadata__"]
    entries.sort(key=lambda e: e[3])
    return 8 + n, entries


# ------------------------------------------------------------------ #
# Saving.

def target(method, d):
    return os.path.join(d, {
        "np-save": "filebench-npy",
        "np-savez": "filebench.npz",
        "torch-save": "filebench.pt",
        "py-save-file": "filebench.safetensors",
        "py-snapshot": "filebench.safetensors",
    }[method])


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


class Saver:
    """One save method: prepare (outside the clock), save (timed; returns
    the time at which the caller could go on), verify (outside)."""

    def __init__(self, method, path, state):
        self.method, self.path, self.state = method, path, state
        self.torch = None
        if method == "torch-save":
            import torch
            self.torch = torch
            self.tensors = {k: torch.from_numpy(v) for k, v in state.items()}
        elif method in ("py-save-file", "py-snapshot"):
            self.cowstore = need_bindings("save_file", "snapshot", "tensor")
            self.tensors = {k: self.cowstore.tensor(v)
                            for k, v in state.items()}
        if method == "np-save":
            os.mkdir(path)

    def save(self):
        m, p, d = self.method, self.path, os.path.dirname(self.path) or "."
        if m == "np-save":
            files = []
            for k, v in self.state.items():
                f = open(os.path.join(p, k + ".npy"), "wb")
                np.save(f, v)
                f.flush()
                files.append(f)
            for f in files:
                os.fsync(f.fileno())
                f.close()
            fsync_dir(p)
            fsync_dir(d)
            return None
        if m in ("np-savez", "torch-save"):
            with open(p, "wb") as f:
                if m == "np-savez":
                    np.savez(f, **self.state)
                else:
                    self.torch.save(self.tensors, f)
                durable_file(f)
            fsync_dir(d)
            return None
        if m == "py-save-file":
            # HOOK (issue 38's bindings): the library writes a temporary
            # file, fsyncs it, renames it, fsyncs the directory.
            self.cowstore.save_file(self.tensors, p)
            return None
        # py-snapshot, HOOK: the caller goes on once save() has returned.
        handle = self.cowstore.snapshot(self.tensors).save(p)
        resumed = now()
        handle.wait()
        return resumed

    def verify(self):
        m, p = self.method, self.path
        bad, seen = 0, set()
        if m == "np-save":
            for k in os.listdir(p):
                key = k[:-4]
                seen.add(key)
                bad += bad_elements(key, np.load(os.path.join(p, k)))
        elif m == "np-savez":
            with np.load(p) as z:
                for k in z.files:
                    seen.add(k)
                    bad += bad_elements(k, z[k])
        elif m == "torch-save":
            for k, v in self.torch.load(p).items():
                seen.add(k)
                bad += bad_elements(k, v.numpy())
        else:
            base, entries = st_header(p)
            for k, dtype, shape, begin, end in entries:
                seen.add(k)
                if dtype != "F32" or (end - begin) % 4:
                    bad += max((end - begin) // 4, 1)
                    continue
                bad += bad_elements(k, np.fromfile(
                    p, np.float32, (end - begin) // 4, offset=base + begin))
        for k, v in self.state.items():
            if k not in seen:
                print("verify: tensor %s is missing" % k, file=sys.stderr)
                bad += v.size
        return bad


def file_bytes(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, k))
                   for k in os.listdir(path))
    return os.path.getsize(path)


def cmd_save(a):
    if a.method.startswith("py-"):
        need_bindings("save_file", "snapshot", "tensor")
    state = make_state(a.state, a.tensors)
    total = sum(v.nbytes for v in state.values())
    path = target(a.method, a.dir)

    # The method once on a tiny state: imports and first calls.
    warm = os.path.join(a.dir, "filebench-warmup")
    os.makedirs(warm, exist_ok=True)
    wpath = target(a.method, warm)
    remove(wpath)
    w = Saver(a.method, wpath, make_state(4096, 2))
    w.save()
    del w
    shutil.rmtree(warm)

    remove(path)
    saver = Saver(a.method, path, state)
    gc.collect()
    before = proc_status()
    reset_peak()
    t0 = now()
    resumed = saver.save()
    t1 = now()
    after = proc_status()
    stall = (resumed if resumed is not None else t1) - t0
    bad = saver.verify()
    size = file_bytes(path)
    if not a.keep:
        remove(path)
    extra = after["VmHWM"] - before["VmRSS"]
    print(json.dumps({
        "method": a.method, "write_pct": 0, "state_bytes": total,
        "tensors": len(state), "shape": "equal", "stall_ns": stall,
        "save_ns": t1 - t0, "save_gb_per_s": total / (t1 - t0),
        "mem_base_bytes": before["VmRSS"], "mem_peak_bytes": after["VmHWM"],
        "extra_bytes": extra, "extra_ratio": extra / total,
        "mem_kind": "VmHWM less VmRSS before",
        "anon_after_bytes": after["RssAnon"] - before["RssAnon"],
        "file_bytes": size, "verify": "failed" if bad else "ok",
        "bad_file_elements": bad}))
    sys.stdout.flush()
    if bad:
        print("filebench.py: %s: %d of %d elements of the file differ from "
              "the state" % (a.method, bad, total // 4), file=sys.stderr)
        return 3
    return 0


# ------------------------------------------------------------------ #
# Loading.

class Loader:
    """One load method: open (and index), first, all (each timed by the
    caller), then the loaded tensors as NumPy arrays for the check."""

    def __init__(self, method, path):
        self.method, self.path = method, path
        self.held = {}
        if method == "torch":
            import torch
            self.torch = torch
        elif method == "py-safe-open":
            self.cowstore = need_bindings("safe_open")

    def open(self):
        m, p = self.method, self.path
        if m == "np-mmap":
            return {k[:-4]: np.load(os.path.join(p, k), mmap_mode="r")
                    for k in sorted(os.listdir(p)) if k.endswith(".npy")}
        if m == "npz":
            z = np.load(p)
            z.files  # the index: read with the zip's directory
            return z
        if m == "torch":
            return self.torch.load(p)
        if m == "np-fromfile":
            return st_header(p)
        # py-safe-open, HOOK (issue 38's bindings)
        f = self.cowstore.safe_open(p)
        handle = f.__enter__()
        handle.keys()
        return (f, handle)

    def close(self, h):
        if self.method == "npz":
            h.close()
        elif self.method == "py-safe-open":
            h[0].__exit__(None, None, None)

    def names(self, h):
        m = self.method
        if m in ("np-mmap", "torch"):
            return list(h.keys())
        if m == "npz":
            return list(h.files)
        if m == "np-fromfile":
            return [e[0] for e in h[1]]
        return list(h[1].keys())

    def get(self, h, key):
        """Tensor @key and its sum (float32, as a Python float)."""
        m = self.method
        if m == "np-mmap":
            t = h[key]
            return t, float(t.sum())
        if m == "npz":
            t = h[key]
            return t, float(t.sum())
        if m == "torch":
            t = h[key]
            return t, t.sum().item()
        if m == "np-fromfile":
            base, entries = h
            for k, _, _, begin, end in entries:
                if k == key:
                    t = np.fromfile(self.path, np.float32, (end - begin) // 4,
                                    offset=base + begin)
                    return t, float(t.sum())
            raise KeyError(key)
        t = h[1].get_tensor(key)
        return t, t.sum().item()

    def all(self, h):
        """Every tensor summed; the tensors held. np-fromfile reads all the
        data in one call, then sums each tensor's slice of it."""
        total = 0.0
        if self.method == "np-fromfile":
            base, entries = h
            end = entries[-1][4] if entries else 0
            data = np.fromfile(self.path, np.float32, end // 4, offset=base)
            for k, _, _, b, e in entries:
                t = data[b // 4:e // 4]
                self.held[k] = t
                total += float(t.sum())
            return total
        for k in self.names(h):
            t, s = self.get(h, k)
            self.held[k] = t
            total += s
        return total

    def as_numpy(self, t):
        if self.method == "torch":
            return t.numpy()
        return np.asarray(t)


def cmd_load(a):
    if a.method.startswith("py-"):
        need_bindings("safe_open")
    ld = Loader(a.method, a.path)
    gc.collect()
    m0 = proc_status()["RssAnon"]
    t0 = now()
    h = ld.open()
    names = ld.names(h)
    t1 = now()
    m1 = proc_status()["RssAnon"]
    first, _ = ld.get(h, "t0000")
    t2 = now()
    m2 = proc_status()["RssAnon"]
    total = ld.all(h)
    t3 = now()
    m3 = proc_status()["RssAnon"]
    m4 = proc_status()["RssAnon"]
    t4 = now()
    h2 = ld.open()
    ld.names(h2)
    t5 = now()
    m5 = proc_status()["RssAnon"]
    ld.close(h2)
    del h2
    bad = sum(bad_elements(k, ld.as_numpy(t)) for k, t in ld.held.items())
    bad += bad_elements("t0000", ld.as_numpy(first))
    state_bytes = sum(ld.as_numpy(t).nbytes for t in ld.held.values())
    print(json.dumps({
        "method": a.method, "file_bytes": file_bytes(a.path),
        "tensors": len(names), "state_bytes": state_bytes,
        "open_ns": t1 - t0, "first_ns": t2 - t1, "all_ns": t3 - t2,
        "reopen_ns": t5 - t4, "anon_before_bytes": m0,
        "open_anon_bytes": m1 - m0, "first_anon_bytes": m2 - m1,
        "all_anon_bytes": m3 - m2, "reopen_anon_bytes": m5 - m4,
        "sum": total,
        "verify": "failed" if bad else "ok", "bad_elements": bad}))
    sys.stdout.flush()
    ld.close(h)
    if bad:
        print("filebench.py: %s: %s: %d elements differ from the state"
              % (a.method, a.path, bad), file=sys.stderr)
        return 3
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("save")
    s.add_argument("--method", required=True, choices=SAVES)
    s.add_argument("--state", required=True, type=parse_size)
    s.add_argument("--tensors", type=int, default=256)
    s.add_argument("--dir", default=".")
    s.add_argument("--keep", action="store_true")
    l = sub.add_parser("load")
    l.add_argument("--method", required=True, choices=LOADS)
    l.add_argument("--path", required=True)
    a = ap.parse_args()
    return cmd_save(a) if a.cmd == "save" else cmd_load(a)


if __name__ == "__main__":
    sys.exit(main())
