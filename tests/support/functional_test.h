/*
 * functional_test.h - the harness of the functionalization unit tests
 * (test_functional*.c): programs with views and in-place ops run three
 * ways, and the ways must agree:
 *
 *   PLAIN      the ordinary strided runtime (views alias);
 *   FN_STRIDED functional mode on the strided backend;
 *   FN_OPAQUE  the opaque test backend (no strides, no sharing), which
 *              needs functionalization, so every tensor is functional.
 *
 * A program is plain C over the public API; the way is chosen by the
 * thread's mode and backend before it runs, so the same code runs three
 * times. Each run records the values of the tensors it emits; every run
 * must record the same shapes and values (and the expected ones, where
 * the test states them). Checks that only make sense in the layer (its
 * queue, generations, trace, memory bound) run in the functional ways.
 */
#ifndef COW_FUNCTIONAL_TEST_H
#define COW_FUNCTIONAL_TEST_H

#include <stdarg.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include <cowstore/functional.h>
#include <cowstore/testing.h>

#include "cow_test.h"
#include "tensor_test.h"

enum way { PLAIN, FN_STRIDED, FN_OPAQUE, WAYS };

static const char *const way_name[WAYS] = {"plain", "functional strided",
    "functional opaque"};

#define MAX_OUT 24
#define MAX_VALUES 512

struct output {
	char name[32];
	int ndim;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t numel;
	double v[MAX_VALUES];
};

struct run {
	enum way way;
	int n;
	struct output out[MAX_OUT];
};

typedef void (*program_fn)(struct run *r);

static inline bool
functional(const struct run *r)
{
	return r->way != PLAIN;
}

/* Record @t's shape and values (read through the public API: a read). */
static inline void
emit(struct run *r, const char *name, const cow_tensor_t *t)
{
	struct output *o;
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0}, k = 0;

	cr_assert_lt(r->n, MAX_OUT);
	cr_assert_eq(cow_tensor_is_functional(t), functional(r),
	    "%s: %s is%s functional", way_name[r->way], name,
	    cow_tensor_is_functional(t) ? "" : " not");
	o = &r->out[r->n++];
	snprintf(o->name, sizeof o->name, "%s", name);
	o->ndim = cow_tensor_ndim(t);
	o->numel = cow_tensor_numel(t);
	cr_assert_leq(o->numel, MAX_VALUES);
	for (int d = 0; d < o->ndim; d++)
		o->sizes[d] = cow_tensor_sizes(t)[d];
	if (o->numel == 0)
		return;
	do {
		o->v[k++] = tt_get(t, idx);
	} while (tt_next(o->ndim, o->sizes, idx));
}

/* emit, and assert the values are @want (row-major). */
static inline void
expect(struct run *r, const char *name, const cow_tensor_t *t,
    const double *want)
{
	const struct output *o;

	emit(r, name, t);
	o = &r->out[r->n - 1];
	for (int64_t k = 0; k < o->numel; k++)
		cr_assert(o->v[k] == want[k], "%s: %s[%lld] = %g, want %g",
		    way_name[r->way], name, (long long)k, o->v[k], want[k]);
}

static inline void
way_enter(enum way w, const cow_backend_t **be, bool *mode)
{
	TT_OK(cow_backend_set_thread(w == FN_OPAQUE ?
	    cow_backend_opaque_test() : cow_backend_strided(), be));
	TT_OK(cow_functional_mode_set_thread(w == FN_STRIDED, mode));
}

static inline void
way_leave(const cow_backend_t *be, bool mode)
{
	TT_OK(cow_backend_set_thread(be, NULL));
	TT_OK(cow_functional_mode_set_thread(mode, NULL));
}

static inline void
compare(const struct run *a, const struct run *b)
{
	cr_assert_eq(a->n, b->n, "%s emitted %d tensors, %s %d",
	    way_name[a->way], a->n, way_name[b->way], b->n);
	for (int i = 0; i < a->n; i++) {
		const struct output *x = &a->out[i], *y = &b->out[i];

		cr_assert_str_eq(x->name, y->name);
		cr_assert_eq(x->ndim, y->ndim, "%s: ndim %d (%s), %d (%s)",
		    x->name, x->ndim, way_name[a->way], y->ndim,
		    way_name[b->way]);
		for (int d = 0; d < x->ndim; d++)
			cr_assert_eq(x->sizes[d], y->sizes[d], "%s: size[%d]",
			    x->name, d);
		for (int64_t k = 0; k < x->numel; k++)
			cr_assert(x->v[k] == y->v[k],
			    "%s[%lld]: %g (%s) but %g (%s)", x->name,
			    (long long)k, x->v[k], way_name[a->way], y->v[k],
			    way_name[b->way]);
	}
}

/* Run @p the three ways; every way must record the same outputs. */
static inline void
run3(program_fn p)
{
	static struct run runs[WAYS];
	uint64_t live0 = cow_test_alloc_stats(cow_allocator_default()).live_bytes;

	for (int w = 0; w < WAYS; w++) {
		const cow_backend_t *be;
		bool mode;

		memset(&runs[w], 0, sizeof runs[w]);
		runs[w].way = (enum way)w;
		way_enter((enum way)w, &be, &mode);
		p(&runs[w]);
		way_leave(be, mode);
		cr_assert_eq(
		    cow_test_alloc_stats(cow_allocator_default()).live_bytes,
		    live0, "%s: the program leaked", way_name[w]);
	}
	for (int w = 1; w < WAYS; w++)
		compare(&runs[PLAIN], &runs[w]);
}

static inline cow_tensor_t *
arange(int ndim, const int64_t *sizes)
{
	return tt_arange(COW_DTYPE_FLOAT64, ndim, sizes, NULL);
}

static inline cow_functional_info_t
info(const cow_tensor_t *t)
{
	cow_functional_info_t i;

	TT_OK(cow_functional_info(t, &i));
	return i;
}

/* t.transpose_(d0, d1): the layer's in-place view op; plain tensors have
 * immutable metadata, so the plain way swaps the handle for a view. */
static inline void
transpose_inplace(struct run *r, cow_tensor_t **t, int d0, int d1)
{
	cow_tensor_t *v;

	if (functional(r)) {
		TT_OK(cow_functional_transpose_(*t, d0, d1));
		return;
	}
	TT_OK(cow_tensor_transpose(*t, d0, d1, &v));
	cow_tensor_release(*t);
	*t = v;
}


/* The line of @tr that contains @needle (formatted), or NULL. */
static inline const char *
trace_find(const cow_functional_trace_t *tr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline const char *
trace_find(const cow_functional_trace_t *tr, const char *fmt, ...)
{
	char needle[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(needle, sizeof needle, fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < cow_functional_trace_length(tr); i++)
		if (strstr(cow_functional_trace_line(tr, i), needle) != NULL)
			return cow_functional_trace_line(tr, i);
	return NULL;
}

#endif
