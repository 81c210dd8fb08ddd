/*
 * Single-threaded storage benchmarks: memcpy (the physical limit), eager
 * clone, lazy clone, materialisation by copy (steady and cold) and by steal,
 * data access.
 */
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#include "bench.h"

/*
 * Prepared objects per batch. Copies in one batch are bounded to 8 MiB so a
 * steady-state batch recycles the same few warm buffers, as a program that
 * materialises, uses and frees tensors does (and as memcpy_warm reuses its
 * one destination); sources for steals are bounded to 512 MiB.
 */
#define BENCH_COPY_MEMORY ((uint64_t)8 << 20)
#define BENCH_MEMORY ((uint64_t)512 << 20)
#define BENCH_MAX_OBJECTS ((uint64_t)1 << 16)

struct storage_state {
	cow_storage_t *src;    /* a COW source (already wrapped) */
	cow_storage_t *keeper; /* a clone that keeps src shared */
	cow_storage_t **objs;  /* prepared per batch */
	cow_storage_t **pool;  /* reused sources (steal) */
	unsigned char *dst;    /* memcpy destinations, ndst of them */
	uint64_t ndst;
};

static uint64_t
objects_within(const struct bench_arg *arg, uint64_t memory)
{
	uint64_t by_memory = memory / (arg->bytes ? arg->bytes : 1);

	if (by_memory < 1)
		by_memory = 1;
	return by_memory < BENCH_MAX_OBJECTS ? by_memory : BENCH_MAX_OBJECTS;
}

static uint64_t
objects_max(const struct bench_arg *arg)
{
	return objects_within(arg, BENCH_MEMORY);
}

static uint64_t
copies_max(const struct bench_arg *arg)
{
	return objects_within(arg, BENCH_COPY_MEMORY);
}

/* A steal touches the storage struct and its context, never the data. A
 * batch of 65536 of them (12 MiB of metadata) measured cache misses, not
 * the protocol: 64-70 ns at 4 KiB against 21-36 ns at 1 MiB, whose batches
 * the memory bound kept small. 1024 keep the metadata in cache at every
 * size; materialize_steal_cold keeps the large batch, to show the miss. */
#define BENCH_STEAL_HOT_OBJECTS 1024

static uint64_t
steals_max(const struct bench_arg *arg)
{
	uint64_t n = objects_max(arg);

	return n < BENCH_STEAL_HOT_OBJECTS ? n : BENCH_STEAL_HOT_OBJECTS;
}

static uint64_t
objects_max_cheap(const struct bench_arg *arg)
{
	(void)arg;
	return BENCH_MAX_OBJECTS;
}

static cow_storage_t *
filled_storage(size_t bytes)
{
	cow_storage_t *s;
	void *p;

	bench_check(cow_storage_new(bytes, bench_allocator(), &s), "cow_storage_new");
	bench_check(cow_storage_mutable_data(s, &p), "cow_storage_mutable_data");
	memset(p, 0x5a, bytes);
	return s;
}

/* Size of the storages behind the unsized (access) benchmarks. */
#define BENCH_ACCESS_BYTES 4096

static void
setup_storage(struct bench_arg *arg)
{
	struct storage_state *st = calloc(1, sizeof *st);

	st->src = filled_storage(arg->bytes ? arg->bytes : BENCH_ACCESS_BYTES);
	bench_check(cow_storage_lazy_clone(st->src, &st->keeper), "lazy_clone");
	st->objs = calloc(BENCH_MAX_OBJECTS, sizeof *st->objs);
	st->pool = calloc(BENCH_MAX_OBJECTS, sizeof *st->pool);
	arg->state = st;
}

static void
teardown_storage(struct bench_arg *arg)
{
	struct storage_state *st = arg->state;

	cow_storage_release(st->keeper);
	cow_storage_release(st->src);
	for (uint64_t i = 0; i < BENCH_MAX_OBJECTS; i++)
		cow_storage_release(st->pool[i]);
	free(st->pool);
	free(st->objs);
	free(st->dst);
	free(st);
	cow_allocator_trim(bench_allocator());
}

/* memcpy into an already-touched buffer, page-aligned like the library's
 * large buffers (a destination at malloc's 16-byte offset into its mapping
 * copies measurably slower, which would flatter the library). */
static uint64_t copies_max(const struct bench_arg *arg);

static void
setup_memcpy_into(struct bench_arg *arg, uint64_t ndst)
{
	struct storage_state *st;
	void *dst;

	setup_storage(arg);
	st = arg->state;
	if (posix_memalign(&dst, 4096, arg->bytes * ndst) != 0)
		bench_fail("posix_memalign", COW_ENOMEM);
	st->dst = dst;
	st->ndst = ndst;
	memset(st->dst, 1, arg->bytes * ndst);
}

/* One destination, warm in cache when it fits. */
static void
setup_memcpy(struct bench_arg *arg)
{
	setup_memcpy_into(arg, 1);
}

/* As many destinations, copied in turn, as materialize_copy has buffers in
 * one batch: the same working set. At 1 MiB that is 8 MiB, more than this
 * machine's 2 MiB L2, so each copy writes memory memcpy_warm finds in cache
 * (docs/performance.md compares each with its own baseline). */
static void
setup_memcpy_rotating(struct bench_arg *arg)
{
	setup_memcpy_into(arg, copies_max(arg));
}

static uint64_t
run_memcpy(struct bench_arg *arg, uint64_t n)
{
	struct storage_state *st = arg->state;
	const void *src = cow_storage_const_data(st->src);
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		unsigned char *d = st->dst + (i % st->ndst) * arg->bytes;

		memcpy(d, src, arg->bytes);
		bench_consume((uintptr_t)d[i % arg->bytes]);
	}
	return bench_now_ns() - t0;
}

/* Eager clone: allocate and copy (the library's eager fallback path on an
 * unshareable storage), then release. */
static void
free_deleter(void *data, size_t nbytes, void *ctx)
{
	(void)nbytes;
	(void)ctx;
	free(data);
}

static void
setup_eager_clone(struct bench_arg *arg)
{
	struct storage_state *st;
	void *ext = malloc(arg->bytes);

	setup_storage(arg);
	st = arg->state;
	memset(ext, 0x5a, arg->bytes);
	cow_storage_release(st->keeper);
	bench_check(cow_storage_from_external(ext, arg->bytes, free_deleter, NULL,
	    COW_STORAGE_NOT_SHAREABLE, &st->keeper), "from_external");
}

BENCH_TIMED_RUN(eager_clone, struct storage_state,
	cow_storage_t *c;

	bench_check(cow_storage_lazy_clone(st->keeper, &c), "eager clone");
	cow_storage_release(c);)

/* Lazy clone + release of a source that is already copy-on-write. */
BENCH_TIMED_RUN(lazy_clone, struct storage_state,
	cow_storage_t *c;

	bench_check(cow_storage_lazy_clone(st->src, &c), "lazy_clone");
	cow_storage_release(c);)

/* Prepare n lazy clones of src (src stays shared by keeper). */
static void
prepare_clones(struct storage_state *st, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		bench_check(cow_storage_lazy_clone(st->src, &st->objs[i]),
		    "lazy_clone");
}

static void
release_objs(struct storage_state *st, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		cow_storage_release(st->objs[i]);
}

static uint64_t
time_materialize(struct storage_state *st, uint64_t n)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++)
		bench_check(cow_storage_materialize(st->objs[i]), "materialize");
	return bench_now_ns() - t0;
}

/* The variants of run_materialize_copy. Steady state: the allocator
 * reuses the pages the previous batch freed. Cold: into memory fresh from
 * the OS (first touch): the allocator gives its retained pages back before
 * each batch. */
enum { COPY_STEADY, COPY_COLD };

/* Materialise by copy. */
static uint64_t
run_materialize_copy(struct bench_arg *arg, uint64_t n)
{
	struct storage_state *st = arg->state;
	uint64_t t;

	prepare_clones(st, n);
	if (arg->variant == COPY_COLD)
		bench_check(cow_allocator_trim(bench_allocator()), "trim");
	t = time_materialize(st, n);
	release_objs(st, n);
	return t;
}

/* Materialise by steal: the sole reference takes the data. The sources are
 * a pool reused across batches (a steal leaves the storage private with the
 * same buffer, ready to be cloned again), so no batch refills memory. */
static uint64_t
run_materialize_steal(struct bench_arg *arg, uint64_t n)
{
	struct storage_state *st = arg->state;

	for (uint64_t i = 0; i < n; i++) {
		cow_storage_t *c;

		if (st->pool[i] == NULL)
			st->pool[i] = filled_storage(arg->bytes);
		bench_check(cow_storage_lazy_clone(st->pool[i], &c), "lazy_clone");
		cow_storage_release(st->pool[i]);
		st->pool[i] = c; /* the sole reference */
		st->objs[i] = c;
	}
	return time_materialize(st, n);
}

/* Const data access (never materialises) on a COW and a private storage,
 * and mutable access on a private one. */
static uint64_t
access_loop_const(const cow_storage_t *s, uint64_t n)
{
	uintptr_t acc = 0;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++)
		acc += (uintptr_t)cow_storage_const_data(s);
	bench_consume(acc);
	return bench_now_ns() - t0;
}

/* The keeper: copy-on-write after setup_storage, private after
 * setup_private. */
static uint64_t
run_const_keeper(struct bench_arg *arg, uint64_t n)
{
	struct storage_state *st = arg->state;

	return access_loop_const(st->keeper, n);
}

static void
setup_private(struct bench_arg *arg)
{
	struct storage_state *st;

	setup_storage(arg);
	st = arg->state;
	cow_storage_release(st->keeper);
	st->keeper = filled_storage(BENCH_ACCESS_BYTES);
}

static uint64_t
run_mutable_private(struct bench_arg *arg, uint64_t n)
{
	struct storage_state *st = arg->state;
	uintptr_t acc = 0;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < n; i++) {
		void *p;

		bench_check(cow_storage_mutable_data(st->keeper, &p), "mutable");
		acc += (uintptr_t)p;
	}
	bench_consume(acc);
	return bench_now_ns() - t0;
}

const struct bench bench_storage_table[] = {
	{.name = "memcpy_rotating", .group = "copy", .sized = true,
	    .bandwidth = true, .setup = setup_memcpy_rotating,
	    .teardown = teardown_storage, .run = run_memcpy},
	{.name = "memcpy_warm", .group = "copy", .sized = true,
	    .bandwidth = true, .setup = setup_memcpy,
	    .teardown = teardown_storage, .run = run_memcpy},
	{.name = "eager_clone", .group = "copy", .sized = true,
	    .bandwidth = true, .setup = setup_eager_clone,
	    .teardown = teardown_storage, .run = run_eager_clone},
	{.name = "lazy_clone", .group = "copy", .sized = true,
	    .setup = setup_storage, .teardown = teardown_storage,
	    .run = run_lazy_clone},
	{.name = "materialize_copy", .group = "copy", .sized = true,
	    .bandwidth = true, .setup = setup_storage,
	    .teardown = teardown_storage, .run = run_materialize_copy,
	    .max_batch = copies_max, .variant = COPY_STEADY},
	{.name = "materialize_copy_cold", .group = "copy", .sized = true,
	    .bandwidth = true, .setup = setup_storage,
	    .teardown = teardown_storage, .run = run_materialize_copy,
	    .max_batch = copies_max, .variant = COPY_COLD},
	{.name = "materialize_steal", .group = "copy", .sized = true,
	    .setup = setup_storage, .teardown = teardown_storage,
	    .run = run_materialize_steal, .max_batch = steals_max},
	{.name = "materialize_steal_cold", .group = "copy", .sized = true,
	    .setup = setup_storage, .teardown = teardown_storage,
	    .run = run_materialize_steal, .max_batch = objects_max},
	{.name = "const_data_cow", .group = "access", .setup = setup_storage,
	    .teardown = teardown_storage, .run = run_const_keeper},
	{.name = "const_data_private", .group = "access",
	    .setup = setup_private, .teardown = teardown_storage,
	    .run = run_const_keeper},
	{.name = "mutable_data_private", .group = "access",
	    .setup = setup_private, .teardown = teardown_storage,
	    .run = run_mutable_private, .max_batch = objects_max_cheap},
	{0},
};
