/*
 * scn_tensor_mix.c - views, lazy clones and writes on tensors (the public
 * tensor API, include/cowstore/tensor.h and ops.h), handed between threads
 * through an MPMC ring (ring.h, over ck_ring).
 *
 * An item is one tensor plus its reference: the values it must hold, kept
 * by the harness in a plain row-major array and updated by independent index
 * math whenever the item changes. Only one thread holds an item at a time,
 * and no two items share a storage (a view replaces its base in the item),
 * so the storage contract holds; items that are lazy copies of each other
 * DO travel to different threads, where they are read, viewed, written and
 * released at the same time: that is what the runtime must make safe.
 *
 * Each thread takes an item from the ring (or makes a new one), checks the
 * tensor's values against the reference (a checksum of the values read
 * through the tensor's strides against the reference's, then the first
 * differing element), and does one of:
 * - lazy clone: a new item on a new storage sharing the data (the clone
 *   reads the same address, its storage differs, the data is shared);
 * - view: narrow, slice with step, transpose or select, which replaces the
 *   item's tensor (the view must share the storage: aliasing);
 * - write: fill_, add_scalar_ or one element, on the whole tensor or a
 *   narrowed region (afterwards the storage is private);
 * - read: an out-of-place add of the tensor to itself (the input must stay
 *   exactly as it was: no materialisation, same address);
 * - reshape in lazy-copy mode (thread override): a flat item on a new
 *   storage;
 * - eager clone: a new item that shares nothing.
 * Then it hands the item on. Items retire after a few hops; at the end the
 * ring is drained and every allocation must be back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/ops.h>
#include <cowstore/tensor.h>

#include "harness.h"
#include "handoff.h"
#include "ring.h"
#include "strided_walk.h"

#define TM_MAX_NDIM 3
#define TM_HOPS 12   /* an item retires after this many hand-offs */
#define TM_STEPS 8   /* items each thread handles per round */

struct tm_ref {
	int ndim;
	int64_t sizes[TM_MAX_NDIM];
	int64_t numel;
	int64_t *v; /* row-major values */
};

struct tm_item {
	cow_tensor_t *t;
	struct tm_ref ref;
	unsigned hops;
};

/* A view of a reference, as strides over its row-major array. */
struct tm_view {
	int ndim;
	int64_t sizes[TM_MAX_NDIM];
	int64_t strides[TM_MAX_NDIM];
	int64_t offset;
};

enum tm_vop { TM_NARROW, TM_SLICE, TM_TRANSPOSE, TM_SELECT };

struct tm_vspec {
	enum tm_vop op;
	int dim, dim1;
	int64_t start, end, step, len, index;
};

struct tm_state {
	struct stress_handoff h;   /* first: stress_handoff_state_new */
	_Atomic int64_t items;     /* live items */
	_Atomic uint64_t n_lazy, n_view, n_write, n_read, n_reshape, n_clone;
	_Atomic uint64_t n_handoff;
};

/* ---- references ------------------------------------------------------- */

static bool
tm_ref_init(struct tm_ref *r, int ndim, const int64_t *sizes)
{
	r->ndim = ndim;
	r->numel = 1;
	for (int d = 0; d < ndim; d++) {
		r->sizes[d] = sizes[d];
		r->numel *= sizes[d];
	}
	r->v = malloc((size_t)(r->numel > 0 ? r->numel : 1) * sizeof *r->v);
	return r->v != NULL;
}

static void
tm_ref_fini(struct tm_ref *r)
{
	free(r->v);
	r->v = NULL;
}

static void
tm_view_whole(const struct tm_ref *r, struct tm_view *v)
{
	int64_t s = 1;

	v->ndim = r->ndim;
	v->offset = 0;
	for (int d = r->ndim - 1; d >= 0; d--) {
		v->sizes[d] = r->sizes[d];
		v->strides[d] = s;
		s *= r->sizes[d];
	}
}

static int64_t
tm_view_numel(const struct tm_view *v)
{
	int64_t n = 1;

	for (int d = 0; d < v->ndim; d++)
		n *= v->sizes[d];
	return n;
}

/* Visit every element of @v in row-major order: pos (its array index). */
#define TM_VIEW_FOREACH(v, pos, body)                                       \
	STRIDED_FOREACH(v, tm_view_numel(v), k_, pos, body)

/* The same view the library computes, by our own index math. */
static void
tm_view_apply(struct tm_view *v, const struct tm_vspec *s)
{
	int d = s->dim;
	int64_t t;

	switch (s->op) {
	case TM_NARROW:
		v->offset += s->start * v->strides[d];
		v->sizes[d] = s->len;
		break;
	case TM_SLICE:
		v->offset += s->start * v->strides[d];
		v->sizes[d] = (s->end - s->start + s->step - 1) / s->step;
		v->strides[d] *= s->step;
		break;
	case TM_TRANSPOSE:
		t = v->sizes[d];
		v->sizes[d] = v->sizes[s->dim1];
		v->sizes[s->dim1] = t;
		t = v->strides[d];
		v->strides[d] = v->strides[s->dim1];
		v->strides[s->dim1] = t;
		break;
	case TM_SELECT:
		v->offset += s->index * v->strides[d];
		for (int i = d; i + 1 < v->ndim; i++) {
			v->sizes[i] = v->sizes[i + 1];
			v->strides[i] = v->strides[i + 1];
		}
		v->ndim--;
		break;
	}
}

/* A new reference holding the elements of view @v of @r. */
static bool
tm_ref_gather(const struct tm_ref *r, const struct tm_view *v,
    struct tm_ref *out)
{
	int64_t k = 0;

	if (!tm_ref_init(out, v->ndim, v->sizes))
		return false;
	TM_VIEW_FOREACH(v, pos, out->v[k++] = r->v[pos]);
	return true;
}

static cow_status_t
tm_view_tensor(cow_tensor_t *t, const struct tm_vspec *s, cow_tensor_t **out)
{
	switch (s->op) {
	case TM_NARROW:
		return cow_tensor_narrow(t, s->dim, s->start, s->len, out);
	case TM_SLICE:
		return cow_tensor_slice(t, s->dim, s->start, s->end, s->step,
		    out);
	case TM_TRANSPOSE:
		return cow_tensor_transpose(t, s->dim, s->dim1, out);
	default:
		return cow_tensor_select(t, s->dim, s->index, out);
	}
}

static const char *
tm_vop_name(enum tm_vop op)
{
	static const char *const names[] = {"narrow", "slice", "transpose",
	    "select"};

	return names[op];
}

/* A random view of shape @r that keeps at least one element and one
 * dimension. @only_narrow: a region for a write. */
static void
tm_pick_view(struct stress_rng *rng, const struct tm_ref *r,
    bool only_narrow, struct tm_vspec *s)
{
	unsigned kinds = only_narrow ? 1 : r->ndim >= 2 ? 4 : 2;
	int64_t size;

	memset(s, 0, sizeof *s);
	s->op = (enum tm_vop)stress_rng_below(rng, kinds);
	s->dim = (int)stress_rng_below(rng, (uint64_t)r->ndim);
	size = r->sizes[s->dim];
	switch (s->op) {
	case TM_NARROW:
		s->start = (int64_t)stress_rng_below(rng, (uint64_t)size);
		s->len = 1 + (int64_t)stress_rng_below(rng,
		    (uint64_t)(size - s->start));
		break;
	case TM_SLICE:
		s->start = (int64_t)stress_rng_below(rng, (uint64_t)size);
		s->end = s->start + 1 + (int64_t)stress_rng_below(rng,
		    (uint64_t)(size - s->start));
		s->step = 1 + (int64_t)stress_rng_below(rng, 3);
		break;
	case TM_TRANSPOSE:
		s->dim1 = (int)stress_rng_below(rng, (uint64_t)r->ndim);
		break;
	case TM_SELECT:
		s->index = (int64_t)stress_rng_below(rng, (uint64_t)size);
		break;
	}
}

/* ---- items -------------------------------------------------------------- */

/* The tensor's values, read through its strides (a read: const access). */
static void
tm_tensor_values(const cow_tensor_t *t, int64_t *out)
{
	struct tm_view v;
	const unsigned char *base = cow_tensor_const_data(t);
	cow_dtype_t dt = cow_tensor_dtype(t);
	size_t es = cow_dtype_size(dt);
	int64_t k = 0;

	v.ndim = cow_tensor_ndim(t);
	v.offset = 0;
	for (int d = 0; d < v.ndim; d++) {
		v.sizes[d] = cow_tensor_sizes(t)[d];
		v.strides[d] = cow_tensor_strides(t)[d];
	}
	TM_VIEW_FOREACH(&v, pos, {
		const unsigned char *p = base + (size_t)pos * es;

		if (dt == COW_DTYPE_INT32) {
			int32_t x;

			memcpy(&x, p, sizeof x);
			out[k++] = x;
		} else {
			double x;

			memcpy(&x, p, sizeof x);
			out[k++] = (int64_t)x;
		}
	});
}

/* Check the item's tensor against its reference. */
static bool
tm_verify(struct stress_run *run, const cow_tensor_t *t,
    const struct tm_ref *r, const char *when)
{
	int64_t *got;
	bool shape_ok = cow_tensor_ndim(t) == r->ndim &&
	    cow_tensor_numel(t) == r->numel;
	bool ok;

	for (int d = 0; shape_ok && d < r->ndim; d++)
		shape_ok = cow_tensor_sizes(t)[d] == r->sizes[d];
	if (!stress_check(run, shape_ok, "%s: tensor shape differs from its "
	    "reference (ndim %d, numel %" PRId64 "; expected %d, %" PRId64 ")",
	    when, cow_tensor_ndim(t), cow_tensor_numel(t), r->ndim, r->numel))
		return false;
	if (r->numel == 0)
		return true;
	got = malloc((size_t)r->numel * sizeof *got);
	if (got == NULL)
		abort();
	tm_tensor_values(t, got);
	ok = stress_checksum(got, (size_t)r->numel * sizeof *got) ==
	    stress_checksum(r->v, (size_t)r->numel * sizeof *r->v);
	if (!ok) {
		int64_t i = 0;

		while (i < r->numel && got[i] == r->v[i])
			stress_beat((uint64_t)i++);
		stress_check(run, false, "%s: checksum of a %s tensor differs "
		    "from its reference: element %" PRId64 " is %" PRId64
		    ", expected %" PRId64, when,
		    cow_dtype_name(cow_tensor_dtype(t)), i,
		    i < r->numel ? got[i] : 0, i < r->numel ? r->v[i] : 0);
	} else {
		stress_checks_passed(run, 1);
	}
	free(got);
	return ok;
}

static void
tm_item_free(struct tm_state *st, struct tm_item *it)
{
	cow_tensor_release(it->t);
	tm_ref_fini(&it->ref);
	free(it);
	atomic_fetch_sub(&st->items, 1);
}

static struct tm_item *
tm_item_alloc(struct tm_state *st)
{
	struct tm_item *it = calloc(1, sizeof *it);

	if (it == NULL)
		abort();
	atomic_fetch_add(&st->items, 1);
	return it;
}

/* A new item: random dtype and shape, random values. */
static struct tm_item *
tm_item_new(struct stress_run *run, struct tm_state *st,
    struct stress_rng *rng)
{
	struct tm_item *it = tm_item_alloc(st);
	int64_t n = (int64_t)(run->opt->size / 8), sizes[TM_MAX_NDIM];
	int ndim = 1 + (int)stress_rng_below(rng, TM_MAX_NDIM);
	cow_dtype_t dt = stress_rng_below(rng, 2) ? COW_DTYPE_INT32 :
	    COW_DTYPE_FLOAT64;
	size_t es = cow_dtype_size(dt);
	unsigned char *data;

	if (n < 8)
		n = 8;
	if (ndim == 1) {
		sizes[0] = n;
	} else if (ndim == 2) {
		sizes[0] = 2 + (int64_t)stress_rng_below(rng, 15);
		sizes[1] = n / sizes[0] > 0 ? n / sizes[0] : 1;
	} else {
		sizes[0] = 2 + (int64_t)stress_rng_below(rng, 7);
		sizes[1] = 2 + (int64_t)stress_rng_below(rng, 7);
		sizes[2] = n / (sizes[0] * sizes[1]) > 0 ?
		    n / (sizes[0] * sizes[1]) : 1;
	}
	if (!tm_ref_init(&it->ref, ndim, sizes))
		abort();
	data = malloc((size_t)it->ref.numel * es);
	if (data == NULL)
		abort();
	for (int64_t i = 0; i < it->ref.numel; i++) {
		int64_t x = (int64_t)stress_rng_below(rng, 1000);

		stress_beat((uint64_t)i);
		it->ref.v[i] = x;
		if (dt == COW_DTYPE_INT32) {
			int32_t y = (int32_t)x;

			memcpy(data + (size_t)i * es, &y, es);
		} else {
			double y = (double)x;

			memcpy(data + (size_t)i * es, &y, es);
		}
	}
	if (!stress_check(run, cow_tensor_from_data(dt, ndim, sizes, data,
	    stress_allocator(), &it->t) == COW_OK, "cow_tensor_from_data: %s",
	    cow_last_error()))
		abort();
	free(data);
	return it;
}

/* Queue @it for another thread, or retire it. */
static void
tm_hand_off(struct tm_state *st, struct tm_item *it)
{
	if (it->hops++ >= TM_HOPS ||
	    stress_ring_count(st->h.ring) >= st->h.population ||
	    !stress_ring_put(st->h.ring, it)) {
		tm_item_free(st, it);
		return;
	}
	atomic_fetch_add_explicit(&st->n_handoff, 1, memory_order_relaxed);
}

/* A new item around @t with a copy of @r as its reference. */
static void
tm_spawn(struct tm_state *st, cow_tensor_t *t, const struct tm_ref *r,
    unsigned hops)
{
	struct tm_item *n = tm_item_alloc(st);

	n->t = t;
	n->hops = hops;
	if (!tm_ref_init(&n->ref, r->ndim, r->sizes))
		abort();
	memcpy(n->ref.v, r->v, (size_t)r->numel * sizeof *r->v);
	tm_hand_off(st, n);
}

/* ---- actions ------------------------------------------------------------ */

static void
tm_lazy_clone(struct stress_run *run, struct tm_state *st,
    struct tm_item *it)
{
	cow_tensor_t *c;
	cow_storage_t *sc, *stt;

	if (!stress_check(run, cow_tensor_lazy_clone(it->t, &c) == COW_OK,
	    "cow_tensor_lazy_clone: %s", cow_last_error()))
		return;
	sc = cow_tensor_storage(c);
	stt = cow_tensor_storage(it->t);
	stress_check(run, sc != stt && cow_storage_shares_data(sc, stt) &&
	    cow_tensor_const_data(c) == cow_tensor_const_data(it->t),
	    "a lazy clone must have its own storage sharing the data at the "
	    "same address");
	tm_verify(run, c, &it->ref, "new lazy clone");
	atomic_fetch_add_explicit(&st->n_lazy, 1, memory_order_relaxed);
	tm_spawn(st, c, &it->ref, it->hops);
}

static void
tm_view(struct stress_run *run, struct tm_state *st, struct tm_item *it,
    struct stress_rng *rng)
{
	struct tm_vspec s;
	struct tm_view v;
	struct tm_ref nr;
	cow_tensor_t *vt;

	tm_pick_view(rng, &it->ref, false, &s);
	if (!stress_check(run, tm_view_tensor(it->t, &s, &vt) == COW_OK,
	    "%s view: %s", tm_vop_name(s.op), cow_last_error()))
		return;
	stress_check(run, cow_tensor_storage(vt) == cow_tensor_storage(it->t),
	    "a %s view does not share its base's storage",
	    tm_vop_name(s.op));
	tm_view_whole(&it->ref, &v);
	tm_view_apply(&v, &s);
	if (!tm_ref_gather(&it->ref, &v, &nr))
		abort();
	/* The view replaces its base: one tensor per storage in flight. */
	cow_tensor_release(it->t);
	tm_ref_fini(&it->ref);
	it->t = vt;
	it->ref = nr;
	tm_verify(run, it->t, &it->ref, tm_vop_name(s.op));
	atomic_fetch_add_explicit(&st->n_view, 1, memory_order_relaxed);
}

static void
tm_write(struct stress_run *run, struct tm_state *st, struct tm_item *it,
    struct stress_rng *rng)
{
	struct tm_vspec s;
	struct tm_view v;
	cow_tensor_t *region = it->t;
	unsigned kind = (unsigned)stress_rng_below(rng, 3);
	int64_t k = 1 + (int64_t)stress_rng_below(rng, 9);
	cow_status_t rc;

	tm_view_whole(&it->ref, &v);
	if (stress_rng_below(rng, 2) == 0) {
		tm_pick_view(rng, &it->ref, true, &s);
		if (!stress_check(run, tm_view_tensor(it->t, &s, &region) ==
		    COW_OK, "narrow for a write: %s", cow_last_error()))
			return;
		tm_view_apply(&v, &s);
	}
	if (kind == 0) {
		rc = cow_tensor_fill_(region, (double)k);
		TM_VIEW_FOREACH(&v, pos, it->ref.v[pos] = k);
	} else if (kind == 1) {
		rc = cow_tensor_add_scalar_(region, (double)k);
		TM_VIEW_FOREACH(&v, pos, it->ref.v[pos] += k);
	} else {
		/* One element: the region's last one. */
		int64_t idx[TM_MAX_NDIM], pos = v.offset;

		for (int d = 0; d < v.ndim; d++) {
			idx[d] = v.sizes[d] - 1;
			pos += idx[d] * v.strides[d];
		}
		rc = cow_tensor_set_i64(region, idx, k);
		it->ref.v[pos] = k;
	}
	stress_check(run, rc == COW_OK, "in-place write: %s",
	    cow_last_error());
	if (region != it->t)
		cow_tensor_release(region);
	stress_check(run, !cow_storage_is_cow(cow_tensor_storage(it->t)),
	    "a storage is still copy-on-write after a write");
	tm_verify(run, it->t, &it->ref, "after a write");
	atomic_fetch_add_explicit(&st->n_write, 1, memory_order_relaxed);
}

static void
tm_read(struct stress_run *run, struct tm_state *st, struct tm_item *it)
{
	cow_storage_t *s = cow_tensor_storage(it->t);
	const void *d0 = cow_tensor_const_data(it->t);
	bool cow0 = cow_storage_is_cow(s);
	cow_tensor_t *sum;
	struct tm_ref twice;

	if (!stress_check(run, cow_tensor_add(it->t, it->t, &sum) == COW_OK,
	    "cow_tensor_add: %s", cow_last_error()))
		return;
	stress_check(run, cow_tensor_const_data(it->t) == d0 &&
	    cow_storage_is_cow(s) == cow0,
	    "an out-of-place op changed its input's data or COW state");
	if (!tm_ref_init(&twice, it->ref.ndim, it->ref.sizes))
		abort();
	for (int64_t i = 0; i < it->ref.numel; i++) {
		stress_beat((uint64_t)i);
		twice.v[i] = 2 * it->ref.v[i];
	}
	tm_verify(run, sum, &twice, "result of t + t");
	tm_ref_fini(&twice);
	cow_tensor_release(sum);
	atomic_fetch_add_explicit(&st->n_read, 1, memory_order_relaxed);
}

static void
tm_reshape(struct stress_run *run, struct tm_state *st, struct tm_item *it)
{
	int64_t flat = it->ref.numel;
	cow_tensor_t *r;
	struct tm_ref fr = it->ref;

	if (!stress_check(run, cow_tensor_reshape(it->t, 1, &flat, &r) ==
	    COW_OK, "cow_tensor_reshape: %s", cow_last_error()))
		return;
	stress_check(run, cow_tensor_storage(r) != cow_tensor_storage(it->t),
	    "reshape in lazy-copy mode returned an alias");
	fr.ndim = 1;
	fr.sizes[0] = flat;
	tm_verify(run, r, &fr, "reshape");
	atomic_fetch_add_explicit(&st->n_reshape, 1, memory_order_relaxed);
	tm_spawn(st, r, &fr, it->hops);
}

static void
tm_clone(struct stress_run *run, struct tm_state *st, struct tm_item *it)
{
	cow_tensor_t *c;

	if (!stress_check(run, cow_tensor_clone(it->t, &c) == COW_OK,
	    "cow_tensor_clone: %s", cow_last_error()))
		return;
	stress_check(run, !cow_storage_shares_data(cow_tensor_storage(c),
	    cow_tensor_storage(it->t)), "an eager clone shares data");
	tm_verify(run, c, &it->ref, "eager clone");
	atomic_fetch_add_explicit(&st->n_clone, 1, memory_order_relaxed);
	tm_spawn(st, c, &it->ref, it->hops);
}

/* ---- the scenario --------------------------------------------------------- */

static bool
tm_setup(struct stress_run *run)
{
	struct tm_state *st = stress_handoff_state_new(sizeof *st,
	    run->threads);

	if (st == NULL)
		return false;
	run->state = st;
	return true;
}

static void
tm_teardown(struct stress_run *run)
{
	struct tm_state *st = run->state;
	uint64_t handoff = atomic_load(&st->n_handoff);
	uint64_t lazy = atomic_load(&st->n_lazy);
	uint64_t view = atomic_load(&st->n_view);
	uint64_t write = atomic_load(&st->n_write);
	uint64_t read = atomic_load(&st->n_read);
	uint64_t reshape = atomic_load(&st->n_reshape);
	uint64_t clone = atomic_load(&st->n_clone);

	snprintf(run->note, sizeof run->note,
	    "%" PRIu64 " %s; %" PRIu64 " lazy %s, %" PRIu64 " %s, %" PRIu64
	    " %s, %" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64 " eager %s",
	    handoff, stress_plural(handoff, "hand-off", "hand-offs"),
	    lazy, stress_plural(lazy, "clone", "clones"),
	    view, stress_plural(view, "view", "views"),
	    write, stress_plural(write, "write", "writes"),
	    read, stress_plural(read, "read", "reads"),
	    reshape, stress_plural(reshape, "reshape", "reshapes"),
	    clone, stress_plural(clone, "clone", "clones"));
	stress_ring_free(st->h.ring);
	free(st);
	run->state = NULL;
}

static void
tm_worker(struct stress_run *run, unsigned tid)
{
	struct tm_state *st = run->state;
	struct stress_rng rng;
	struct tm_item *it;

	stress_rng_init(&rng, run->seed, tid, 5);
	if (cow_reshape_mode_set_thread(COW_RESHAPE_LAZY_COPY, NULL) != COW_OK)
		abort();
	while (stress_next_round(run, tid)) {
		for (unsigned step = 0; step < TM_STEPS; step++) {
			unsigned act;

			it = stress_ring_get(st->h.ring);
			if (it == NULL)
				it = tm_item_new(run, st, &rng);
			tm_verify(run, it->t, &it->ref, "received");
			stress_perturb(&rng);
			act = (unsigned)stress_rng_below(&rng, 100);
			if (act < 25)
				tm_lazy_clone(run, st, it);
			else if (act < 45)
				tm_view(run, st, it, &rng);
			else if (act < 75)
				tm_write(run, st, it, &rng);
			else if (act < 85)
				tm_read(run, st, it);
			else if (act < 93)
				tm_reshape(run, st, it);
			else
				tm_clone(run, st, it);
			stress_ops(run, tid, 2);
			tm_hand_off(st, it);
		}
	}
	/* Drain: every item is released, then every allocation is back. */
	stress_barrier(run);
	while ((it = stress_ring_get(st->h.ring)) != NULL) {
		tm_verify(run, it->t, &it->ref, "drained");
		tm_item_free(st, it);
	}
	cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL);
	stress_barrier(run);
	if (tid == 0) {
		stress_check(run, atomic_load(&st->items) == 0,
		    "items unaccounted for after the drain: %" PRId64,
		    atomic_load(&st->items));
		stress_check(run, stress_default_live_allocs() ==
		    st->h.base_allocs, "live allocations after every tensor "
		    "was released: %" PRIu64 " (expected %" PRIu64 ")",
		    stress_default_live_allocs(), st->h.base_allocs);
	}
}

const struct stress_scenario stress_scn_tensor_mix = {
	.name = "tensor-mix",
	.summary = "views, lazy clones and writes on tensors, handed between "
	    "threads through a ring",
	.setup = tm_setup,
	.worker = tm_worker,
	.teardown = tm_teardown,
};
