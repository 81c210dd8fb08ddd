#!/bin/sh
# make_seeds.sh - write the hand-made seed inputs of fuzz/corpus/ and the
# negative-control input of fuzz/controls/. Run from anywhere; the files are
# committed, so this only needs re-running when the input formats change.
#
# fuzz_storage ops (fuzz_storage.c): 00 new FLAGS SIZE, 01 external FLAGS
# SIZE PATTERN, 02 clone K, 03 write K OFF16 LEN PATTERN, 04 read K OFF16
# LEN, 05 materialize K, 06 release K, 07 retain K, 08 fault MODE ARG
# [SEED64]. K picks the K-th live storage; FLAGS bit 0: new uses the default
# allocator (else the fault one), external is not shareable. SIZE < 200 is
# bytes, else (SIZE - 199) * 256. Fault MODE: 0 off, 1 fail next, 2 fail
# the (2 + ARG % 8)-th, 3 fail with probability ARG/255.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)

hex() {
	for b in "$@"; do
		printf "\\$(printf '%03o' "0x$b")"
	done
}

seed() {
	out=$1
	shift
	hex "$@" > "$out"
}

s=$dir/corpus/fuzz_storage
c=$dir/controls/fuzz_storage
a=$dir/corpus/fuzz_api
mkdir -p "$s" "$c" "$a"

# new, clone, write through the clone: the other must not change. This
# input fails against skip_materialize (the negative control).
seed "$c/write_through_clone" 00 00 10 02 00 03 01 00 00 04 07
seed "$s/write_through_clone" 00 00 10 02 00 03 01 00 00 04 07
# the full life: clone, write, read, materialise, release
seed "$s/clone_write_read" 00 00 10 02 00 03 01 00 00 04 07 04 00 00 00 10 \
    05 00 06 00 06 00
# three shares; the last one materialises by stealing
seed "$s/steal_last" 00 00 40 02 00 02 00 06 00 06 00 05 00 03 00 05 00 08 09
# allocation failures: a clone, a new and a copy that must fail, then work
seed "$s/fail_next" 00 00 20 08 01 00 02 00 08 01 00 00 00 08 02 00 02 00 \
    02 00 08 01 00 03 01 00 00 08 01 08 00 00 03 01 00 00 08 01
# random failures, then every allocation failing
seed "$s/fail_random" 00 00 30 08 03 80 01 02 03 04 05 06 07 08 02 00 02 01 \
    03 02 04 00 10 09 05 01 00 00 50 08 03 ff 00 00 00 00 00 00 00 00 \
    00 00 30 02 00 00 01 05 05 00
# external memory, shareable and not, with clones and writes
seed "$s/external" 01 00 40 03 02 00 03 00 05 00 02 06 00 01 01 20 05 02 01 \
    03 02 00 00 20 01 06 00 06 00
# zero-byte storages
seed "$s/zero_bytes" 00 00 00 02 00 03 01 00 00 00 00 05 00 01 00 00 00 02 02 \
    01 01 00 00 02 03
# kilobytes, writes at large offsets
seed "$s/large" 00 00 ff 02 00 03 00 00 30 ff 11 03 01 ff 37 80 22 04 00 00 \
    30 ff 06 00 05 00
# retained references
seed "$s/retain" 00 00 08 07 00 02 00 07 01 06 00 06 00 03 00 00 00 08 01 \
    06 00 06 00 06 00
# a full pool
seed "$s/full_pool" 00 00 10 02 00 02 00 02 00 02 00 02 00 02 00 02 00 02 00 \
    03 03 00 00 10 05 05 07 06 00 03 00 00 00 10 00

# fuzz_api calls (fuzz_api.c): 00 storage_new, 01 from_external, 02 clone,
# 03 mutable/materialize, 04 queries, 05 release, 06 allocator_new,
# 07 allocator misc, 08 fault arming, 09 raw alloc, 0a status strings.
# (The f3 bytes are selectors: they were ff, which chose a pin while only
# ff reached the later calls; f3 still does. See docs/fuzzing.md.)
seed "$a/new_sizes" 00 00 10 01 01 00 04 00 04 01 00 05 01 03 00 01 01 \
    00 06 3f 03 01 00 07 ff ff f3 ff ff f3 ff ff 04 01
seed "$a/external" 01 38 00 40 00 01 08 00 40 01 01 00 00 40 00 01 30 04 ff \
    ff f3 ff ff f3 ff 7f 00 01 01 38 00 10 ff 01 01 03 00 00 00
seed "$a/clone_mutate" 00 00 20 01 01 02 00 01 02 01 01 03 00 09 03 01 01 \
    03 00 08 04 00 01 05 00 00 05 01 01 02 06 01 04 02 00
seed "$a/allocators" 06 7f 05 06 ff 28 06 5f 28 06 3f 10 07 00 01 07 03 00 \
    07 04 00 07 01 01
seed "$a/fault" 08 03 01 08 0b 00 ff ff ff ff ff ff ff ff 08 0b a0 00 00 \
    00 00 00 00 00 00 08 0b c0 00 00 00 00 00 00 00 00 08 13 00 00 03 20 \
    00 03 20 08 03 00 02 02 04 00 00 00 10 08 03 00
seed "$a/raw_alloc" 09 01 00 40 40 09 02 00 40 03 09 03 00 40 48 09 04 04 \
    00 10 09 02 00 00 40 09 04 07 01 02 03 04 05 06 07 08 ff 01 02 03 04 \
    05 06 07 08
seed "$a/misc" 0a 00 0a f6 0a f5 0a 01 0a 80 04 06 06 04 00 00

# A fixed finding (docs/fuzzing.md): an external zero-byte storage over
# non-NULL data reported that data instead of NULL.
seed "$a/known-external_zero_data" 01 31 00 00 00
seed "$a/external_zero_data" 01 31 00 00 00 05 00 01 05 00 00

# fuzz_tensor ops (fuzz_tensor.c, run_op): 00 zeros, 01 full, 02 from_data
# (DTYPE NDIM, 18 size bytes: < 236 gives value % 5), 03 arange, 04-0e the
# views select slice narrow transpose permute unsqueeze squeeze squeeze_all
# expand diagonal as_strided (SRC A B C ...), 0f view, 10 reshape (SRC HOW,
# 18 sizes), 11 lazy clone/contiguous/clone, 12-13 in-place (KIND DST SRC
# VALUE), 14 set, 15-16 out-of-place (KIND A B DIM KEEPDIM), 17 release,
# 18 fail the K-th next allocation (K % 5; 0 disarms); bytes fa-fd a tensor
# over external memory (KIND DTYPE VERSIONED NDIM SIZES CONTIGUOUS
# [STRIDES] [OFFSET] BYTES...), fe-ff a producer's write (MEMORY ELEMENT
# BYTES...).
t=$dir/corpus/fuzz_tensor
mkdir -p "$t"
# Every kind of external memory (00 owned, 01 borrowed, 02 read-only, 03-05
# DLPack imports: writable, read-only, copied) as a 2x3 float32, then a lazy
# clone, writes through both, a producer's write and a release.
for kind in 00 01 02 03 04 05; do
	offset=00 # imports have no offset byte
	case $kind in 03 | 04 | 05) offset= ;; esac
	seed "$t/external_$kind" fa $kind 04 01 02 02 03 01 $offset \
	    00 00 80 3f 00 00 00 40 00 00 40 40 00 00 80 40 00 00 a0 40 \
	    00 00 c0 40 11 00 00 12 00 00 00 47 12 00 01 00 46 fe 00 02 \
	    00 00 20 41 17 00 11 00 00
done
seed "$t/views_fill" 00 05 02 03 04 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 04 00 03 01 00 12 00 01 00 47 07 00 03 04 00 05 00 04 00 02 00 04 \
    12 01 03 00 02 17 01
seed "$t/int_ops" 01 02 02 02 03 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 43 12 01 00 00 46 12 04 00 00 00 15 02 00 00 00 00 15 03 00 00 00 \
    00 15 04 00 00 01 01 15 05 00 01 00 00
# int_ops over each dtype appended later (06 int8 .. 0e complex128).
for dt in 06 07 08 09 0a 0b 0c 0d 0e; do
	seed "$t/ops_dtype_$dt" 01 $dt 02 02 03 01 01 01 01 01 01 01 01 01 01 \
	    01 01 01 01 01 01 43 12 01 00 00 46 12 04 00 00 00 15 02 00 00 00 \
	    00 15 03 00 00 00 00 15 04 00 00 01 01 15 05 00 01 00 00
done
seed "$t/uint8_wrap" 03 01 cd 12 02 00 00 42 15 00 00 00 00 00 15 05 00 01 \
    00 00
# True division of integers (issue 39): int64 [2, 3] of INT64_MAX (2^63 as
# float64) over int64 [2, 3] of 3, a float64 quotient; div_ of them
# refused; bool over bool.
seed "$t/int_div" 01 03 02 02 03 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 87 01 03 02 02 03 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    43 15 06 01 00 01 00 00 12 06 01 00 01 00 01 00 02 02 03 01 01 01 01 01 \
    01 01 01 01 01 01 01 01 01 01 01 41 15 06 01 03 03 00 00
seed "$t/lazy_clone_reshape" 02 04 02 02 02 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 01 01 01 86 00 87 00 0a 00 8f 00 11 00 00 12 00 01 00 46 10 00 \
    16 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 10 00 25 01 01 \
    01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 0f 00 14 01 01 01 01 01 \
    01 01 01 01 01 01 01 01 01 01 01 01 01 10 00 03 01 01 01 01 01 01 01 01 \
    01 01 01 01 01 01 01 01 01 01
seed "$t/expand_copy" 00 03 02 01 03 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 0c 00 01 01 00 03 02 02 03 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 13 05 01 00 00 11 01 01 11 01 02 13 05 00 01 00
seed "$t/more_views" 00 05 03 03 03 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 0d 00 00 03 04 08 00 01 00 00 09 00 03 00 00 0a 00 05 00 00 0b \
    00 00 00 00 06 00 03 01 02 0e 00 01 00 00 02 03 00 04 01 02 03 01 01 01 \
    00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 \
    00 01 00 01 00 01 00 14 00 00 46 03 00 00 00 00 00 00 00 00 00 00 00 00 \
    00 00 00 00 00 00 14 00 01 46 03 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 01 01
seed "$t/bool_ops" 01 00 01 04 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 41 15 00 00 00 00 00 15 02 00 00 00 00 12 00 00 00 40 15 03 00 00 \
    00 00 13 05 00 00 00

# A fixed finding: zeros of shape [0, 3, 2^63 - 1] overflowed in
# cow__contiguous_strides.
seed "$t/known-empty_huge_strides" 00 00 03 00 03 ff ff

# fuzz_api tensor calls (0b-0e: api_tensor.c): 00 create, 01 from_storage,
# 02 accessors, 03 views, 04 reshape modes, 05 ops, 06 retain/release.
seed "$a/tensor_calls" 0b 00 0a 05 02 03 02 03 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 01 01 01 0b 03 01 0f 00 01 00 00 00 01 02 02 03 01 01 01 01 01 \
    01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 0b 05 07 01 00 00 00 0b 04 01 01 0b 04 02 00 0b 05 0c 01 00 0b 02 \
    00 00 07 0b 06 00 0b 01 0f 05 02 00 02 02
seed "$a/tensor_nulls" 0c 00 00 05 02 03 0c 02 04 00 ff 0c 03 05 00 04 0c 05 \
    00 00 04 04 0c 05 0c 01 04 0c 06 04 0c 04 fe 00
# snapshots (api_snapshot.c, selector f4; its calls 00 new, 01 view, 02 write,
# 03 pin, 04 take, 06 release, 07 get, 08 stream, 09 persist-first): three
# tensors and a transposed view, two snapshots, a write that copies once,
# gets, a stream in a permuted order with a write from inside its callback
seed "$a/snapshot_stream" f4 00 02 02 00 02 03 00 01 02 03 04 05 06 07 08 09 \
    0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 16 17 f4 00 05 00 01 00 00 00 00 00 00 \
    04 40 f4 00 01 01 02 04 09 08 07 06 f4 01 00 00 00 01 03 f4 04 00 04 00 01 \
    02 03 f4 04 01 01 03 f4 02 05 00 f4 07 00 00 f4 07 00 03 f4 08 00 02 02 00 \
    01 02 02 07 f4 07 00 01 f4 06 00 0d 00
# persist-first saves with a writer inside the saver's pwrite (it persists
# the tensor itself), a permuted order, keep, and a second save after keep
seed "$a/snapshot_persist_first" f4 00 02 01 00 03 00 01 02 03 04 05 06 07 \
    08 09 0a 0b f4 00 0b 02 01 02 02 00 01 02 03 04 05 06 07 f4 00 0d 01 02 02 \
    00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f f4 01 01 01 00 11 03 f4 04 \
    00 04 00 01 02 03 f4 09 00 00 01 02 03 05 f4 04 01 04 00 01 02 03 f4 09 01 \
    03 01 00 00 01 00 04 00 f4 09 01 01 01 01 06 09 f4 09 01 00 00 00 00 01
# early release, cancel, a failing write callback, a bad order, out of range,
# a NULL name, a pinned tensor (an eager copy) written through its pin
seed "$a/snapshot_errors" f4 00 02 02 00 02 02 00 01 02 03 04 05 06 07 08 09 \
    0a 0b 0c 0d 0e 0f f4 00 00 01 01 03 00 01 02 f4 00 01 01 02 00 f4 04 00 03 \
    00 01 02 f4 06 00 00 01 f4 08 00 00 00 00 00 f4 04 00 03 00 01 02 f4 06 00 \
    04 00 f4 08 00 00 00 00 00 f4 08 00 29 00 00 00 f4 08 00 06 00 00 01 00 05 \
    00 00 00 f4 07 00 08 f4 06 00 00 08 f4 03 00 00 f4 04 01 f6 00 00 01 f4 04 \
    01 02 00 01 f4 03 00 02 f4 07 01 00 f4 03 00 01 f4 02 12 00 f4 09 01 00 00 \
    00 00 00
# allocation failures inside tensor calls: materialise, clone, create
seed "$t/alloc_failures" 00 05 02 02 02 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 01 11 00 00 18 01 12 00 01 00 47 12 00 01 00 47 18 02 11 00 02 \
    18 01 00 03 01 04 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 01 18 \
    02 15 00 00 01 00 00 18 01 10 00 14 01 01 01 01 01 01 01 01 01 01 01 01 \
    01 01 01 01 01 01
# A fixed finding: zeros [1], as_strided(sizes {1}, strides {2^62}),
# fill_: overflowed in cow__iter_add.
seed "$t/known-huge_stride_iter" 00 05 01 01 01 01 01 01 01 01 \
    01 01 01 01 01 01 01 01 01 01 01 0e 00 00 00 00 01 01 7e 01 00 01 00 01 \
    00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 00 01 \
    00 01 00 01 00 12 00 01 00 47

# fuzz_functional (fuzz_functional.c, decode): byte 0 bit 0 turns the trace
# on; then ops, each OPCODE DST ...: 00 create SUB(zeros full arange
# from_data) DTYPE NDIM SIZES.. VALUE [DATA..], 01 view SRC KIND ARGS.. (kinds
# 00 view 01 select 02 slice 03 narrow 04 transpose 05 permute 06 unsqueeze
# 07 squeeze 08 squeeze_all 09 expand 0a diagonal 0b as_strided), 02 reshape
# SRC MODE(alias lazy) NDIM SIZES.., 03 lazy_clone SRC, 04 clone SRC,
# 05 scalar_ SUB(fill add mul) VALUE, 06 binary_ SRC SUB(add mul copy),
# 07 set NDIM INDEX.. VALUE, 08 binary A B SUB, 09 neg A, 0a sum A SUB DIM,
# 0b equal A B SUB, 0c transpose_ D0 D1, 0d check, 0e release, 0f fault
# WORLD(1 + b % 2) NTH(1 + b % 16), 10 storage STORE DTYPE N SLACK VALUES..
# (N elements of DTYPE, then SLACK zero bytes), 11 from_storage STORE DTYPE
# FLAGS(bit 0 strides given, bit 1 the storage's dtype) NDIM SIZES..
# [STRIDES..] OFFSET. A size byte is taken % 5, except fa (-1) and fb..fe
# (5..8).
f=$dir/corpus/fuzz_functional
fc=$dir/controls/fuzz_functional
mkdir -p "$f" "$fc"
# the example of docs/functionalization.md, traced: x = zeros(2); x1 = x.view(1, 2);
# x[1].fill_(2); y = x1 + 3
seed "$f/seed_example" 01 00 00 00 04 01 02 00 01 01 00 00 02 01 02 01 02 00 \
    01 00 01 05 02 00 02 00 03 01 04 00 03 08 04 01 03 00 0d 04 0d 00
# two overlapping slices filled one after the other (the later write wins).
# The same input fails against functional_reverse_updates.
seed "$f/overlapping_fills" 00 00 00 00 02 01 04 00 01 01 00 02 00 00 03 01 \
    01 02 00 02 00 01 04 01 05 01 00 01 05 02 00 02 0d 00
seed "$fc/overlapping_fills" 00 00 00 00 02 01 04 00 01 01 00 02 00 00 03 01 \
    01 02 00 02 00 01 04 01 05 01 00 01 05 02 00 02 0d 00
# every view kind of arange [3, 1, 4], written through, the base checked
seed "$f/every_view_kind" 00 00 00 02 05 03 03 01 04 00 \
    01 01 00 01 02 fe 05 01 01 05 0d 00 \
    01 01 00 02 02 00 04 02 05 01 02 03 0d 00 \
    01 01 00 03 00 01 02 00 05 01 00 07 0d 00 \
    01 01 00 04 00 02 05 01 01 01 0d 00 \
    01 01 00 05 03 02 00 01 05 01 01 02 0d 00 \
    01 01 00 06 03 00 05 01 01 03 0d 00 \
    01 01 00 07 01 00 05 01 01 04 0d 00 \
    01 01 00 08 05 01 01 05 0d 00 \
    01 01 00 09 04 01 03 01 04 05 01 01 06 0d 00 \
    01 02 00 08 01 01 02 0a 01 00 01 05 01 01 07 0d 00 \
    01 01 00 0b 02 02 03 05 02 01 05 01 00 09 0d 00 \
    01 01 00 00 02 02 fa 05 01 01 08 0d 00 0d 01 0d 02
# ops: add_, mul_, add, neg, sums, equal, copy_ with conversion, set
seed "$f/ops" 00 00 00 02 05 02 02 03 00 00 01 02 05 01 03 00 06 00 01 00 \
    06 00 01 01 08 02 00 01 00 09 03 02 0a 04 00 00 00 0a 05 00 02 00 \
    0b 00 02 03 00 00 03 00 02 02 02 03 00 06 03 00 02 07 03 02 01 02 09 \
    0d 00 0d 01 0d 02 0d 03 0d 04 0d 05
# true division of integers (issue 39): arange int64 [2, 3] over full int64
# [3] of -3 and over itself (0 / 0: NaN), bool over bool (x / 0: inf), all
# float64; div_ of int64 refused in every world
seed "$f/int_div" 00 00 00 02 03 02 02 03 00 00 01 01 03 01 03 fd 08 02 00 \
    01 03 08 05 00 00 03 06 00 01 04 00 03 01 00 01 03 01 00 04 00 00 01 03 \
    00 08 04 03 04 03 0d 02 0d 05 0d 04 0d 00
# transpose_ of an alias, then a write through a view of it
seed "$f/transpose_inplace" 00 00 00 02 05 02 02 03 00 01 01 00 03 01 00 03 \
    00 0c 01 00 01 01 02 01 01 00 02 05 02 00 05 0d 00 0d 01 0d 02
# allocation failures in both functional worlds: in-place op, sum, lazy
# clone, set
seed "$f/faults" 00 00 00 02 03 02 04 04 00 01 01 00 01 00 01 01 02 00 01 01 \
    02 05 01 00 ff 0f 00 01 02 05 02 01 07 0f 00 02 01 0a 03 02 00 00 0f 00 \
    01 01 03 04 01 0f 00 02 03 07 02 01 03 05 0d 00 0d 03 0d 04
# reshape in alias and lazy-copy modes, and of a transpose (a copy)
seed "$f/reshape_modes" 00 00 00 02 05 02 02 03 00 02 01 00 00 01 fa 02 02 00 \
    01 01 fa 05 01 00 03 05 02 01 01 01 03 00 04 00 01 02 04 03 00 01 fa 05 \
    04 01 02 0d 00 0d 01 0d 02 0d 04
# Sums in ops.h's order (issue 36): a float32 [8] of 7 * 2^16, 2^-14,
# -7 * 2^16, 2^-14, 0, 0, 0, 0 (eight partial sums give 0, index order
# 2^-14: the opaque backend's before the fix), and the transpose of a
# float32 [3, 3] multiplied by 1 in place, then summed (its layout's runs
# of 3 give 2^-14; the functional strided world summed its contiguous new
# value as one run: 0), and a sum over dim 1
seed "$f/sum_order" 00 00 00 03 04 01 fe 00 7f 71 81 71 00 00 00 00 \
    0a 01 00 00 00 00 02 03 04 02 03 03 00 7f 71 00 71 00 00 81 00 00 \
    01 03 02 04 00 01 05 03 02 01 0a 04 03 00 00 0a 05 02 02 01 \
    0d 01 0d 04 0d 05
# Tensors over one storage (issue 15). The issue's repro: two float32 [4]
# tensors over a 16-byte storage, fill_ through one: the other and the
# storage must see it (failed before the fix: the functional worlds' storage
# stayed 0).
# The same input fails against functional_group_per_tensor (the
# bug, planted).
fs=$dir/controls/fuzz_functional_storage
mkdir -p "$fs"
for out in "$f/storage_alias" "$fs/storage_alias"; do
	seed "$out" 00 10 00 00 04 04 00 00 00 00 00 11 00 00 04 00 01 04 00 \
	    11 01 00 04 00 01 04 00 05 00 00 03 0d 01
done
# float64 [3, 4] over 12 elements and 2 more bytes, its transpose by
# strides, a 2x2 block at offset 5, written through; an int32 tensor over
# the storage while they live (refused by the functional worlds: skipped),
# then after their release (made; it reads the float64 bytes as int32)
seed "$f/storage_layouts" 00 10 00 00 05 0c 02 01 02 03 04 05 06 07 07 06 \
    05 04 03 11 00 00 05 00 02 03 04 00 11 01 00 05 01 02 04 03 01 04 00 \
    11 02 00 05 01 02 02 02 04 01 05 05 02 00 ff 01 03 01 01 00 03 \
    05 03 02 02 11 04 00 02 00 01 04 00 0d 00 0d 01 0d 03 \
    0e 00 0e 01 0e 02 0e 03 11 04 00 02 00 01 04 00 05 04 01 01 0d 04
# a write, then the release of the only tensor over the storage (its
# group goes with the write still queued), a new tensor over it, a view
# that outlives it, a tensor joining the view's group; an allocation
# failure armed for the first write through a storage tensor, in each
# functional world
seed "$f/storage_orders" 00 10 01 01 03 06 00 01 02 03 04 05 06 \
    11 00 01 03 02 01 fc 00 05 00 01 02 0e 00 \
    11 01 01 03 02 01 03 02 0f 00 00 04 05 01 02 03 \
    11 02 01 03 02 01 fc 00 01 03 02 03 00 01 03 00 0e 02 0e 01 \
    0f 00 01 01 05 03 01 01 11 04 01 03 02 01 fc 00 0d 04 0d 03
