/*
 * cow_instr_count - runs one hot operation N times, for counting its
 * instructions under valgrind's callgrind (scripts/instr-counts.sh). It
 * times nothing and prints nothing on success.
 *
 *   cow_instr_count OPERATION N
 *
 * OPERATION is one of:
 *   lazy_clone         cow_storage_lazy_clone of a storage already
 *                      copy-on-write (another clone keeps it shared): the
 *                      share count's increment, not the first clone's CAS
 *   release            cow_storage_release of such a clone (the source still
 *                      shares the data: a decrement, the struct freed)
 *   steal              cow_storage_mutable_data on a lazy clone whose source
 *                      was released: the last share takes the data, no copy
 *   tensor_const_data  cow_tensor_const_data on a contiguous 64 x 64
 *                      float32 tensor
 *
 * Each operation runs in a function of its own, instr_<OPERATION>, never
 * inlined, whose loop makes the call and nothing else; callgrind counts
 * only inside it (--toggle-collect=instr_<OPERATION>*). The objects a call
 * needs (a clone to release, a sole share to steal) are prepared outside
 * it, and the calls come in batches of INSTR_BATCH: fewer than the
 * library's per-thread block cache holds (COW__CACHE_DEPTH, alloc/cache.h),
 * so every call takes the steady-state path the benchmarks time, and the
 * count per call does not depend on N. N must be a multiple of INSTR_BATCH.
 *
 * Storages use the default allocator, 4 KiB each (a steal never touches
 * the data, so the size does not change a count).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#define INSTR_BATCH 16
#define INSTR_BYTES 4096

#define INSTR_NOINLINE __attribute__((noinline))

/* Keep results alive so the compiler cannot drop the calls. */
static volatile uintptr_t instr_sink;

static _Noreturn void
instr_fail(const char *what, cow_status_t status)
{
	fprintf(stderr, "cow_instr_count: %s failed: %s (%s)\n", what,
	    cow_status_str(status), cow_last_error());
	exit(2);
}

static void
instr_check(cow_status_t status, const char *what)
{
	if (status != COW_OK)
		instr_fail(what, status);
}

/* --- the measured functions ---------------------------------------------- */

INSTR_NOINLINE static void
instr_lazy_clone(cow_storage_t *src, cow_storage_t **out, int n)
{
	for (int i = 0; i < n; i++)
		instr_check(cow_storage_lazy_clone(src, &out[i]),
		    "cow_storage_lazy_clone");
}

INSTR_NOINLINE static void
instr_release(cow_storage_t **objs, int n)
{
	for (int i = 0; i < n; i++)
		cow_storage_release(objs[i]);
}

INSTR_NOINLINE static void
instr_steal(cow_storage_t **objs, void **ptrs, int n)
{
	for (int i = 0; i < n; i++)
		instr_check(cow_storage_mutable_data(objs[i], &ptrs[i]),
		    "cow_storage_mutable_data");
}

INSTR_NOINLINE static void
instr_tensor_const_data(const cow_tensor_t *t, int n)
{
	uintptr_t acc = 0;

	for (int i = 0; i < n; i++)
		acc += (uintptr_t)cow_tensor_const_data(t);
	instr_sink ^= acc;
}

/* --- set-up, the batches, tear-down ---------------------------------------- */

static void
release_all(cow_storage_t **objs, int n)
{
	for (int i = 0; i < n; i++)
		cow_storage_release(objs[i]);
}

/* A copy-on-write source (@keeper keeps it shared), 4 KiB, filled. */
static void
cow_source(cow_storage_t **src, cow_storage_t **keeper)
{
	void *p;

	instr_check(cow_storage_new(INSTR_BYTES, NULL, src), "cow_storage_new");
	instr_check(cow_storage_mutable_data(*src, &p), "cow_storage_mutable_data");
	memset(p, 0x5a, INSTR_BYTES);
	instr_check(cow_storage_lazy_clone(*src, keeper), "cow_storage_lazy_clone");
}

static void
run_clone_or_release(uint64_t batches, bool release)
{
	cow_storage_t *src, *keeper, *objs[INSTR_BATCH];

	cow_source(&src, &keeper);
	for (uint64_t b = 0; b < batches; b++) {
		if (release) {
			for (int i = 0; i < INSTR_BATCH; i++)
				instr_check(cow_storage_lazy_clone(src, &objs[i]),
				    "cow_storage_lazy_clone");
			instr_release(objs, INSTR_BATCH);
		} else {
			instr_lazy_clone(src, objs, INSTR_BATCH);
			release_all(objs, INSTR_BATCH);
		}
	}
	cow_storage_release(keeper);
	cow_storage_release(src);
}

/* Each pool storage is private after its steal, with the same buffer:
 * clone it, release it, and the clone is the next sole share. */
static void
run_steal(uint64_t batches)
{
	cow_storage_t *pool[INSTR_BATCH];
	void *ptrs[INSTR_BATCH];

	for (int i = 0; i < INSTR_BATCH; i++)
		instr_check(cow_storage_new(INSTR_BYTES, NULL, &pool[i]),
		    "cow_storage_new");
	for (uint64_t b = 0; b < batches; b++) {
		for (int i = 0; i < INSTR_BATCH; i++) {
			cow_storage_t *c;

			instr_check(cow_storage_lazy_clone(pool[i], &c),
			    "cow_storage_lazy_clone");
			cow_storage_release(pool[i]);
			pool[i] = c;
		}
		instr_steal(pool, ptrs, INSTR_BATCH);
		for (int i = 0; i < INSTR_BATCH; i++)
			instr_sink ^= (uintptr_t)ptrs[i];
	}
	release_all(pool, INSTR_BATCH);
}

static void
run_tensor_const_data(uint64_t batches)
{
	const int64_t sizes[2] = {64, 64};
	cow_tensor_t *t;

	instr_check(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, sizes, NULL, &t),
	    "cow_tensor_zeros");
	if (cow_tensor_const_data(t) == NULL)
		instr_fail("cow_tensor_const_data", COW_EINVAL);
	for (uint64_t b = 0; b < batches; b++)
		instr_tensor_const_data(t, INSTR_BATCH);
	cow_tensor_release(t);
}

/* The calls took the path their name says: @wraps contexts installed (the
 * first clone of a private storage), @steals steals, nothing copied. */
static void
check_paths(uint64_t wraps, uint64_t steals)
{
	cow_stats_t s;

	cow_stats_get(&s);
	if (s.eager_fallbacks != 0 || s.materialize_copies != 0 ||
	    s.ctx_wraps != wraps || s.materialize_steals != steals) {
		fprintf(stderr, "cow_instr_count: unexpected path: contexts "
		    "installed %llu (expected %llu), steals %llu (expected %llu), "
		    "eager clones %llu, copies %llu\n",
		    (unsigned long long)s.ctx_wraps, (unsigned long long)wraps,
		    (unsigned long long)s.materialize_steals,
		    (unsigned long long)steals,
		    (unsigned long long)s.eager_fallbacks,
		    (unsigned long long)s.materialize_copies);
		exit(1);
	}
}

static _Noreturn void
usage(void)
{
	fprintf(stderr, "usage: cow_instr_count lazy_clone|release|steal|"
	    "tensor_const_data N (N a positive multiple of %d)\n", INSTR_BATCH);
	exit(2);
}

int
main(int argc, char **argv)
{
	unsigned long long n;
	char *end;

	if (argc != 3)
		usage();
	errno = 0;
	n = strtoull(argv[2], &end, 10);
	if (errno != 0 || *end != '\0' || argv[2][0] == '-' || n == 0 ||
	    n % INSTR_BATCH != 0)
		usage();
	if (strcmp(argv[1], "lazy_clone") == 0) {
		run_clone_or_release(n / INSTR_BATCH, false);
		check_paths(1, 0);
	} else if (strcmp(argv[1], "release") == 0) {
		run_clone_or_release(n / INSTR_BATCH, true);
		check_paths(1, 0);
	} else if (strcmp(argv[1], "steal") == 0) {
		run_steal(n / INSTR_BATCH);
		check_paths(n, n);
	} else if (strcmp(argv[1], "tensor_const_data") == 0) {
		run_tensor_const_data(n / INSTR_BATCH);
		check_paths(0, 0);
	} else {
		usage();
	}
	return 0;
}
