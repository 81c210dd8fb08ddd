"""crosscheck-reference.py - cowstore against the reference implementations
it claims to match: the safetensors package (files both ways) and PyTorch's
torch._lazy_clone (lazy-copy costs side by side, one process, one run).

Neither reference is in Debian, so CI cannot run this; run it once where
both are installed (docs/files.md says where it ran and what it printed):

    PYTHONPATH=<dir holding the cowstore package> python3 \
        scripts/crosscheck-reference.py [--quick] [--json OUT.json]

Checks (an AssertionError names the case that fails):
  cow->ref   every dtype, shapes (scalar, zero-size, 1-3 dims), transposed
             and strided views, metadata: cowstore.save_file writes, the
             safetensors package reads (safe_open with framework="pt" and
             safetensors.torch.load of the bytes), compared byte for byte.
  ref->cow   the same tensors written by safetensors.torch.save_file,
             loaded by cowstore (mapped and pread), byte for byte.
  random     random tensor sets both ways.
Figures (median of rounds, printed and written to --json):
  load       open + index of a 1,000-tensor file; all tensors of it.
  save       256 float32 tensors totalling 256 MiB (1 GiB without --quick),
             each library saving its own tensors, against a plain write.
  take       a snapshot of those 256 tensors against torch._lazy_clone of
             each and against eager clones.
  lazy       one lazy clone + release; first write after a lazy clone of a
             64 MiB tensor (copy); first write after the clone was released
             (steal).
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

import numpy as np
import safetensors
import safetensors.torch
import torch

import cowstore

# cowstore dtype name -> torch dtype (the safetensors codes both share).
DTYPES = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8,
    "int16": torch.int16, "uint16": torch.uint16, "int32": torch.int32,
    "uint32": torch.uint32, "int64": torch.int64, "uint64": torch.uint64,
    "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float32": torch.float32, "float64": torch.float64,
    "complex64": torch.complex64,
}
SHAPES = [(), (0,), (3, 0, 2), (1,), (7,), (4, 5), (2, 3, 4)]
checks = 0


def check(cond, what):
    global checks
    assert cond, what
    checks += 1


def fresh(t):
    """A C-contiguous copy of @t with standard strides (contiguous() keeps
    odd strides of size-1 dimensions, which view() refuses)."""
    return torch.empty(t.shape, dtype=t.dtype).copy_(t)


def torch_bytes(t):
    """The C-order bytes of a torch tensor."""
    t = fresh(t)
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def cow_bytes(t):
    """The C-order bytes of a cowstore tensor (a buffer request without a
    format, which bfloat16 needs: PEP 3118 has no code for it)."""
    return b"".join([t.contiguous()])


def random_torch(dtype, shape, rng):
    """A torch tensor of @dtype and @shape with values from @rng: random
    bytes for integers, finite values for floating and complex types (so
    that a failure prints readable numbers)."""
    n = 1
    for d in shape:
        n *= d
    if dtype == torch.bool:
        flat = torch.tensor([rng.random() < 0.5 for _ in range(n)],
                            dtype=torch.bool)
    elif dtype.is_complex:
        flat = torch.tensor([complex(rng.uniform(-1e3, 1e3),
                                     rng.uniform(-1e3, 1e3)) for _ in range(n)],
                            dtype=torch.complex128).to(dtype)
    elif dtype.is_floating_point:
        flat = torch.tensor([rng.uniform(-1e3, 1e3) for _ in range(n)],
                            dtype=torch.float64).to(dtype)
    else:
        size = torch.empty((), dtype=dtype).element_size()
        raw = bytearray(rng.getrandbits(8) for _ in range(max(n, 1) * size))
        flat = torch.frombuffer(raw, dtype=dtype)[:n].clone()
    return flat.reshape(shape)


VIEWS = {
    "plain": lambda t: t,
    "transposed": lambda t: t.transpose(0, 1),
    "strided": lambda t: t[::2],
}


def views(t):
    """The names of the views of @t the writers must store in C order."""
    out = ["plain"]
    if t.dim() >= 2:
        out.append("transposed")
    if t.dim() >= 1 and t.shape[0] >= 2:
        out.append("strided")
    return out


def tensor_set(rng):
    """Every dtype x shape x view: {name: (base, view name)}, base a
    contiguous torch tensor."""
    out = {}
    for name, dt in DTYPES.items():
        for shape in SHAPES:
            base = random_torch(dt, shape, rng)
            for how in views(base):
                out["%s/%s/%s" % (name, "x".join(map(str, shape)) or "scalar",
                                  how)] = (base, how)
    return out


def as_torch(entry):
    base, how = entry
    return VIEWS[how](base)


def as_cow(entry):
    """The same view in cowstore: the base's bytes in a cowstore tensor of
    its dtype and shape, then the same view operation."""
    base, how = entry
    dtype = str(base.dtype).replace("torch.", "")
    data = bytearray(torch_bytes(base)) or bytearray(1)
    flat = cowstore.from_buffer(data, dtype, (base.numel(),)) \
        if base.numel() else cowstore.empty((0,), dtype)
    return VIEWS[how](flat.reshape(tuple(base.shape)))


def check_cow_to_ref(tensors, tmp):
    path = os.path.join(tmp, "cow.safetensors")
    meta = {"format": "pt", "note": "caf\u00e9 \"quoted\"\n"}
    cow = {k: as_cow(v) for k, v in tensors.items()}
    tensors = {k: as_torch(v) for k, v in tensors.items()}
    cowstore.save_file(cow, path, metadata=meta)
    with safetensors.safe_open(path, framework="pt") as f:
        check(f.metadata() == meta, "cow->ref metadata %r" % (f.metadata(),))
        check(sorted(f.keys()) == sorted(tensors), "cow->ref names")
        for k, v in tensors.items():
            r = f.get_tensor(k)
            check(r.dtype == v.dtype and tuple(r.shape) == tuple(v.shape),
                  "cow->ref %s: %s %s" % (k, r.dtype, tuple(r.shape)))
            check(torch_bytes(r) == torch_bytes(v), "cow->ref %s bytes" % k)
    with open(path, "rb") as fh:
        loaded = safetensors.torch.load(fh.read())
    check(sorted(loaded) == sorted(tensors), "cow->ref load(bytes) names")
    for k, v in tensors.items():
        check(torch_bytes(loaded[k]) == torch_bytes(v),
              "cow->ref load(bytes) %s" % k)


def check_ref_to_cow(tensors, tmp):
    tensors = {k: as_torch(v) for k, v in tensors.items()}
    path = os.path.join(tmp, "ref.safetensors")
    meta = {"writer": "safetensors %s" % safetensors.__version__}
    safetensors.torch.save_file({k: fresh(v) for k, v in tensors.items()},
                                path, metadata=meta)
    for pread in (False, True):
        with cowstore.safe_open(path, pread=pread) as f:
            check(f.metadata() == meta, "ref->cow metadata (pread=%s)" % pread)
            check(sorted(f.keys()) == sorted(tensors), "ref->cow names")
            for k, v in tensors.items():
                c = f.get_tensor(k)
                check(c.dtype == str(v.dtype).replace("torch.", "") and
                      tuple(c.shape) == tuple(v.shape),
                      "ref->cow %s: %s %s" % (k, c.dtype, c.shape))
                check(cow_bytes(c) == torch_bytes(v),
                      "ref->cow %s bytes (pread=%s)" % (k, pread))
    loaded = cowstore.load_file(path)
    for k, v in tensors.items():
        check(cow_bytes(loaded[k]) == torch_bytes(v), "ref->cow load_file %s" % k)


def check_random(rng, tmp, rounds):
    names = list(DTYPES)
    for _ in range(rounds):
        ts = {}
        for i in range(rng.randint(1, 12)):
            shape = tuple(rng.randint(0, 6) for _ in range(rng.randint(0, 4)))
            t = random_torch(DTYPES[rng.choice(names)], shape, rng)
            ts["t%d" % i] = (t, rng.choice(views(t)))
        check_cow_to_ref(ts, tmp)
        check_ref_to_cow(ts, tmp)


def median_s(fn, rounds):
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def figures(tmp, quick):
    fig = {}
    # Load: 1,000 small tensors, written by the reference writer.
    path = os.path.join(tmp, "k.safetensors")
    safetensors.torch.save_file(
        {"p%04d" % i: torch.full((64, 16), float(i)) for i in range(1000)}, path)

    def cow_index():
        with cowstore.safe_open(path) as f:
            f.keys()

    def ref_index():
        with safetensors.safe_open(path, framework="pt") as f:
            f.keys()

    def cow_all():
        return sum(float(t.sum()) for t in cowstore.load_file(path).values())

    def ref_all():
        return sum(float(t.sum()) for t in
                   safetensors.torch.load_file(path).values())

    check(cow_all() == ref_all(), "1,000-tensor sums agree")
    for name, fn in (("open_index_1000_cowstore", cow_index),
                     ("open_index_1000_safetensors", ref_index),
                     ("load_sum_1000_cowstore", cow_all),
                     ("load_sum_1000_safetensors", ref_all)):
        fn()
        fig[name + "_ms"] = median_s(fn, 21) * 1e3

    # Save: 256 float32 tensors, each library saving tensors it owns (a
    # cowstore tensor over NumPy's or torch's memory is pinned: a snapshot
    # copies it, counted in its stats, which would time a copy too).
    total = (256 if quick else 1024) << 20
    each = total // 256 // 4
    state = {"w%03d" % i: torch.full((each,), float(i)) for i in range(256)}
    cow_state = {"w%03d" % i: cowstore.full((each,), float(i), "float32")
                 for i in range(256)}
    out = os.path.join(tmp, "save.safetensors")
    raw = os.path.join(tmp, "plain.bin")

    def plain():
        with open(raw, "wb") as fh:
            for v in state.values():
                fh.write(memoryview(v.numpy()))
            fh.flush()
            os.fsync(fh.fileno())

    def cow_save():
        cowstore.save_file(cow_state, out)

    def cow_snapshot_save():
        cowstore.snapshot(cow_state).save(out).wait()

    def ref_save():
        safetensors.torch.save_file(state, out)
        fd = os.open(out, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)

    saves = (("save_plain_write", plain), ("save_cowstore", cow_save),
             ("save_cowstore_snapshot_job", cow_snapshot_save),
             ("save_safetensors", ref_save))
    times = {name: [] for name, _ in saves}
    for _ in range(4):                # interleaved: the disk's state moves
        for name, fn in saves:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    for name, ts in times.items():
        fig[name + "_s"] = statistics.median(ts[1:])
    fig["save_bytes"] = total
    os.unlink(out)
    os.unlink(raw)

    # Taking a snapshot of the 256 tensors: cowstore's one call against a
    # loop of torch._lazy_clone and against eager clones (the staging copy).
    def take_cow():
        return cowstore.snapshot(cow_state)

    def take_torch_lazy():
        return [torch._lazy_clone(v) for v in state.values()]

    def take_torch_eager():
        return [v.clone() for v in state.values()]

    for name, fn in (("take_256_cowstore_snapshot", take_cow),
                     ("take_256_torch_lazy_clone_loop", take_torch_lazy),
                     ("take_256_torch_eager_clone", take_torch_eager)):
        fn()
        fig[name + "_us"] = median_s(fn, 7) * 1e6
    del state, cow_state

    # Lazy clones: one clone + release; the first write after a clone
    # (copy) and after the clone's release (steal), 64 MiB of float32.
    n = 1 << 20
    small_t = torch.zeros(16)
    small_c = cowstore.zeros((16,))

    def loop_t():
        for _ in range(n // 16):
            torch._lazy_clone(small_t)

    def loop_c():
        for _ in range(n // 16):
            small_c.lazy_clone()

    fig["lazy_clone_release_torch_us"] = median_s(loop_t, 5) / (n // 16) * 1e6
    fig["lazy_clone_release_cowstore_us"] = median_s(loop_c, 5) / (n // 16) * 1e6
    big = 16 << 20
    for lib in ("torch", "cowstore"):
        copy, steal = [], []
        for _ in range(7):
            x = torch.zeros(big) if lib == "torch" else cowstore.zeros((big,))
            x.fill_(1)                    # every page written
            y = torch._lazy_clone(x) if lib == "torch" else x.lazy_clone()
            t0 = time.perf_counter()
            x[1] = 2                      # first write: copy
            copy.append(time.perf_counter() - t0)
            check(float(y[1]) == 1.0 and float(x[1]) == 2.0,
                  "%s: the lazy clone kept its value" % lib)
            y = torch._lazy_clone(x) if lib == "torch" else x.lazy_clone()
            del y
            t0 = time.perf_counter()
            x[2] = 3                      # first write, clone released: steal
            steal.append(time.perf_counter() - t0)
        fig["first_write_copy_64MiB_%s_ms" % lib] = statistics.median(copy) * 1e3
        fig["first_write_steal_64MiB_%s_us" % lib] = statistics.median(steal) * 1e6
    return fig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    print("safetensors %s, torch %s, numpy %s, python %s" % (
        safetensors.__version__, torch.__version__, np.__version__,
        sys.version.split()[0]))
    rng = random.Random(20261128)
    with tempfile.TemporaryDirectory() as tmp:
        ts = tensor_set(rng)
        check_cow_to_ref(ts, tmp)
        check_ref_to_cow(ts, tmp)
        print("every dtype x shape x view, both ways: %d tensors" % len(ts))
        check_random(rng, tmp, 50 if args.quick else 300)
        print("random sets both ways: passed (%d checks so far)" % checks)
        fig = figures(tmp, args.quick)
    for k, v in fig.items():
        print("%-40s %.4g" % (k, v))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"checks": checks, "figures": fig,
                       "versions": {"safetensors": safetensors.__version__,
                                    "torch": torch.__version__}}, fh, indent=1)
    print("crosscheck-reference: %d checks passed" % checks)


if __name__ == "__main__":
    main()
