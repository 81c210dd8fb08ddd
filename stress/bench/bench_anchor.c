/*
 * The reference implementations' loops, step for step, so that cow_bench's
 * figures compare one to one with theirs (docs/performance.md, "Side by
 * side"; scripts/anchors.sh runs both). Each operation below is exactly
 * what one iteration of the references' timed loop does:
 *
 *   anchor_lazy_clone_release  c = lazy_clone(src); release(c)
 *   anchor_materialize_copy    c = lazy_clone(src); mutable_data(c) (a
 *                              copy: src still shares); release(c)
 *   anchor_materialize_steal   c = lazy_clone(src); release(src);
 *                              mutable_data(c) (a steal); src = c
 *   anchor_eager_clone         an eager copy (allocate, copy), then free
 *
 * One source, reused: its metadata stays in cache, as in the references.
 * The steal loop also wraps a fresh context every iteration (src is private
 * again after each steal), as the references' lazy_clone does.
 */
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>

#include "bench.h"

struct anchor_state {
	cow_storage_t *src;
	cow_storage_t *unshareable; /* for the eager copy */
};

static void
no_free(void *data, size_t nbytes, void *ctx)
{
	(void)data;
	(void)nbytes;
	(void)ctx;
}

static void
setup_anchor(struct bench_arg *arg)
{
	struct anchor_state *st = calloc(1, sizeof *st);
	void *p;

	bench_check(cow_storage_new(arg->bytes, bench_allocator(), &st->src), "new");
	bench_check(cow_storage_mutable_data(st->src, &p), "mutable_data");
	memset(p, 1, arg->bytes);
	bench_check(cow_storage_from_external(p, arg->bytes, no_free, NULL,
	    COW_STORAGE_NOT_SHAREABLE, &st->unshareable), "from_external");
	arg->state = st;
}

static void
teardown_anchor(struct bench_arg *arg)
{
	struct anchor_state *st = arg->state;

	cow_storage_release(st->unshareable);
	cow_storage_release(st->src);
	free(st);
	cow_allocator_trim(bench_allocator());
}

BENCH_TIMED_RUN(lazy_clone_release, struct anchor_state,
	cow_storage_t *c;

	bench_check(cow_storage_lazy_clone(st->src, &c), "lazy_clone");
	cow_storage_release(c);)

BENCH_TIMED_RUN(materialize_copy, struct anchor_state,
	cow_storage_t *c;
	void *p;

	bench_check(cow_storage_lazy_clone(st->src, &c), "lazy_clone");
	bench_check(cow_storage_mutable_data(c, &p), "mutable_data");
	bench_consume((uintptr_t)p);
	cow_storage_release(c);)

BENCH_TIMED_RUN(materialize_steal, struct anchor_state,
	cow_storage_t *c;
	void *p;

	bench_check(cow_storage_lazy_clone(st->src, &c), "lazy_clone");
	cow_storage_release(st->src);
	bench_check(cow_storage_mutable_data(c, &p), "mutable_data");
	((unsigned char *)p)[0] = 3;
	st->src = c;)

BENCH_TIMED_RUN(eager_clone, struct anchor_state,
	cow_storage_t *c;

	bench_check(cow_storage_lazy_clone(st->unshareable, &c), "eager clone");
	bench_consume((uintptr_t)cow_storage_const_data(c));
	cow_storage_release(c);)

const struct bench bench_anchor_table[] = {
	{.name = "anchor_lazy_clone_release", .group = "anchor", .sized = true,
	    .setup = setup_anchor, .teardown = teardown_anchor,
	    .run = run_lazy_clone_release},
	{.name = "anchor_materialize_copy", .group = "anchor", .sized = true,
	    .bandwidth = true, .setup = setup_anchor,
	    .teardown = teardown_anchor, .run = run_materialize_copy},
	{.name = "anchor_materialize_steal", .group = "anchor", .sized = true,
	    .setup = setup_anchor, .teardown = teardown_anchor,
	    .run = run_materialize_steal},
	{.name = "anchor_eager_clone", .group = "anchor", .sized = true,
	    .bandwidth = true, .setup = setup_anchor,
	    .teardown = teardown_anchor, .run = run_eager_clone},
	{0},
};
