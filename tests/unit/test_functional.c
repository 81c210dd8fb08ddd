/*
 * Functionalization (docs/functionalization.md): programs with views and in-place
 * ops run three ways, and the ways must agree:
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
#include <stdarg.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include <cowstore/functional.h>

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

static bool
functional(const struct run *r)
{
	return r->way != PLAIN;
}

/* Record @t's shape and values (read through the public API: a read). */
static void
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
static void
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

static void
way_enter(enum way w, const cow_backend_t **be, bool *mode)
{
	TT_OK(cow_backend_set_thread(w == FN_OPAQUE ?
	    cow_backend_opaque_test() : cow_backend_strided(), be));
	TT_OK(cow_functional_mode_set_thread(w == FN_STRIDED, mode));
}

static void
way_leave(const cow_backend_t *be, bool mode)
{
	TT_OK(cow_backend_set_thread(be, NULL));
	TT_OK(cow_functional_mode_set_thread(mode, NULL));
}

static void
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
static void
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

static cow_tensor_t *
arange(int ndim, const int64_t *sizes)
{
	return tt_arange(COW_DTYPE_FLOAT64, ndim, sizes, NULL);
}

static cow_functional_info_t
info(const cow_tensor_t *t)
{
	cow_functional_info_t i;

	TT_OK(cow_functional_info(t, &i));
	return i;
}

/* t.transpose_(d0, d1): the layer's in-place view op; plain tensors have
 * immutable metadata, so the plain way swaps the handle for a view. */
static void
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

TestSuite(functional, .timeout = 60.0);

/* ------------------------------------------------------------------ */
/* The example of docs/functionalization.md.                            */

/*
 * x = zeros(2); x1 = x.view(1, 2); x[1].fill_(2); y = x1 + 3
 * gives y = [[3, 5]] and x = [0, 2].
 */
static void
prog_seed(struct run *r)
{
	cow_tensor_t *x, *x1, *x_1, *three, *y;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 1, (int64_t[]){2}, NULL, &x));
	TT_OK(cow_tensor_view(x, 2, (int64_t[]){1, 2}, &x1));
	TT_OK(cow_tensor_select(x, 0, 1, &x_1));
	TT_OK(cow_tensor_fill_(x_1, 2));
	if (functional(r)) {
		/* The write is queued, not applied: x1 is stale. */
		cr_assert_eq(info(x).pending_updates, 1);
		cr_assert_eq(info(x).generation, 1);
		cr_assert_eq(info(x1).tensor_generation, 0);
		cr_assert_eq(info(x_1).tensor_generation, 1);
	}
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 0, NULL, 3, NULL, &three));
	TT_OK(cow_tensor_add(x1, three, &y));
	if (functional(r)) {
		/* Reading x1 applied the queue and replayed x1's path. */
		cr_assert_eq(info(x1).pending_updates, 0);
		cr_assert_eq(info(x1).tensor_generation, 1);
		cr_assert_eq(info(x1).updates_applied, 1);
	}
	tt_assert_shape(y, 2, (int64_t[]){1, 2});
	expect(r, "y", y, (double[]){3, 5});
	expect(r, "x", x, (double[]){0, 2});
	cow_tensor_release(y);
	cow_tensor_release(three);
	cow_tensor_release(x_1);
	cow_tensor_release(x1);
	cow_tensor_release(x);
}

Test(functional, seed_example)
{
	run3(prog_seed);
}

/* The line of @tr that contains @needle (formatted), or NULL. */
static const char *
trace_find(const cow_functional_trace_t *tr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static const char *
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

/* The trace of that example is view-free IR: view_copy, a scatter
 * of the write into the base, the add on the replayed view. */
Test(functional, seed_example_trace)
{
	static const enum way ways[] = {FN_STRIDED, FN_OPAQUE};

	for (size_t i = 0; i < 2; i++) {
		cow_functional_trace_t *tr;
		const cow_backend_t *be;
		struct run r = {.way = ways[i]};
		unsigned long long x;
		const char *line;
		bool mode;

		way_enter(ways[i], &be, &mode);
		TT_OK(cow_functional_trace_start());
		TT_FAILS(cow_functional_trace_start(), COW_EBUSY,
		    "cow_functional_trace_start");
		prog_seed(&r);
		TT_OK(cow_functional_trace_stop(&tr));
		way_leave(be, mode);
		cr_assert(cow_functional_trace_complete(tr));
		/* %x = zeros(...): x's base; the views and the write's
		 * scatter refer to it by its id. */
		line = trace_find(tr, "= zeros(float32, [2])");
		cr_assert_not_null(line);
		cr_assert_eq(sscanf(line, "%%%llu", &x), 1);
		cr_assert_not_null(trace_find(tr, "= view_copy(%%%llu, [1, 2])",
		    x));
		cr_assert_not_null(trace_find(tr,
		    "= select_copy(%%%llu, dim=0, index=1)", x));
		cr_assert_not_null(trace_find(tr, "= full(float32, [], 2)"));
		cr_assert_not_null(trace_find(tr, "= full(float32, [], 3)"));
		cr_assert_not_null(trace_find(tr,
		    "= select_scatter(%%%llu, %%", x));
		cr_assert_not_null(trace_find(tr, "= add(%%"));
		for (size_t k = 0; k < cow_functional_trace_length(tr); k++) {
			const char *l = cow_functional_trace_line(tr, k);

			cr_assert(l[0] == '%', "line %zu: '%s'", k, l);
			cr_assert(strstr(l, "_(") == NULL,
			    "an in-place op in the trace: '%s'", l);
		}
		cr_assert_str_eq(cow_functional_trace_line(tr, 9999), "");
		cow_functional_trace_free(tr);
	}
	TT_FAILS(cow_functional_trace_stop(NULL), COW_EINVAL,
	    "cow_functional_trace_stop");
}

/* ------------------------------------------------------------------ */
/* Every view kind, written through and read back through other aliases. */

enum vkind {
	V_VIEW, V_RESHAPE, V_SELECT, V_SLICE, V_NARROW, V_TRANSPOSE,
	V_PERMUTE, V_UNSQUEEZE, V_SQUEEZE, V_SQUEEZE_ALL, V_EXPAND, V_DIAGONAL,
	V_AS_STRIDED, V_COUNT
};

static const char *const vkind_name[V_COUNT] = {"view", "reshape",
    "select", "slice", "narrow", "transpose", "permute", "unsqueeze",
    "squeeze", "squeeze_all", "expand", "diagonal", "as_strided"};

static enum vkind cur_kind;

/* A view of @b (shape [3, 1, 4]) of kind @k with elements that do not
 * overlap, so that it can be written. */
static cow_tensor_t *
make_view(cow_tensor_t *b, enum vkind k)
{
	cow_tensor_t *v = NULL, *t;

	switch (k) {
	case V_VIEW:
		TT_OK(cow_tensor_view(b, 2, (int64_t[]){2, 6}, &v));
		break;
	case V_RESHAPE:
		TT_OK(cow_tensor_reshape(b, 2, (int64_t[]){6, -1}, &v));
		break;
	case V_SELECT:
		TT_OK(cow_tensor_select(b, 2, -2, &v));
		break;
	case V_SLICE:
		TT_OK(cow_tensor_slice(b, 2, 0, 4, 2, &v));
		break;
	case V_NARROW:
		TT_OK(cow_tensor_narrow(b, 0, 1, 2, &v));
		break;
	case V_TRANSPOSE:
		TT_OK(cow_tensor_transpose(b, 0, 2, &v));
		break;
	case V_PERMUTE:
		TT_OK(cow_tensor_permute(b, 3, (int[]){2, 0, 1}, &v));
		break;
	case V_UNSQUEEZE:
		TT_OK(cow_tensor_unsqueeze(b, 3, &v));
		break;
	case V_SQUEEZE:
		TT_OK(cow_tensor_squeeze(b, 1, &v));
		break;
	case V_SQUEEZE_ALL:
		TT_OK(cow_tensor_squeeze_all(b, &v));
		break;
	case V_EXPAND:
		/* No broadcast (writable): new leading dims of size 1. */
		TT_OK(cow_tensor_expand(b, 5, (int64_t[]){1, 1, 3, 1, 4}, &v));
		break;
	case V_DIAGONAL:
		TT_OK(cow_tensor_squeeze(b, 1, &t));
		TT_OK(cow_tensor_diagonal(t, 1, 0, 1, &v));
		cow_tensor_release(t);
		break;
	case V_AS_STRIDED:
		TT_OK(cow_tensor_as_strided(b, 2, (int64_t[]){2, 3},
		    (int64_t[]){5, 2}, 1, &v));
		break;
	default:
		cr_assert_fail("kind %d", (int)k);
	}
	return v;
}

static void
prog_view_kind(struct run *r)
{
	cow_tensor_t *b, *v, *other, *v2;
	char name[64];

	b = arange(3, (int64_t[]){3, 1, 4});
	TT_OK(cow_tensor_transpose(b, 0, 2, &other)); /* another alias */
	v = make_view(b, cur_kind);
	TT_OK(cow_tensor_add_scalar_(v, 100));
	TT_OK(cow_tensor_mul_scalar_(v, 2));
	/* A second view of the same kind, made after the writes. */
	v2 = make_view(b, cur_kind);
	snprintf(name, sizeof name, "%s/other", vkind_name[cur_kind]);
	emit(r, name, other);
	snprintf(name, sizeof name, "%s/base", vkind_name[cur_kind]);
	emit(r, name, b);
	snprintf(name, sizeof name, "%s/view", vkind_name[cur_kind]);
	emit(r, name, v);
	snprintf(name, sizeof name, "%s/view2", vkind_name[cur_kind]);
	emit(r, name, v2);
	/* Now written through the other alias, read through the view. */
	TT_OK(cow_tensor_fill_(other, -1));
	snprintf(name, sizeof name, "%s/view-after", vkind_name[cur_kind]);
	emit(r, name, v);
	cow_tensor_release(v2);
	cow_tensor_release(v);
	cow_tensor_release(other);
	cow_tensor_release(b);
}

Test(functional, every_view_kind_written_and_read_through_aliases)
{
	for (cur_kind = 0; cur_kind < V_COUNT; cur_kind++)
		run3(prog_view_kind);
}

/* The values themselves, not only agreement: select and the base. */
static void
prog_select_values(struct run *r)
{
	cow_tensor_t *y, *x;

	y = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_select(y, 0, 0, &x));
	TT_OK(cow_tensor_fill_(x, 2)); /* x = y[0]; x.fill_(2) changes y */
	expect(r, "y", y, (double[]){2, 2, 2, 3, 4, 5});
	expect(r, "x", x, (double[]){2, 2, 2});
	cow_tensor_release(x);
	cow_tensor_release(y);
}

Test(functional, select_fill_changes_the_base)
{
	run3(prog_select_values);
}

/* Views of views: a chain four deep, written at the bottom, read at every
 * level and through a second chain. */
static void
prog_views_of_views(struct run *r)
{
	cow_tensor_t *b, *v1, *v2, *v3, *v4, *w1, *w2;

	b = arange(2, (int64_t[]){6, 4});
	TT_OK(cow_tensor_view(b, 3, (int64_t[]){3, 2, 4}, &v1));
	TT_OK(cow_tensor_transpose(v1, 0, 2, &v2));   /* [4, 2, 3] */
	TT_OK(cow_tensor_slice(v2, 0, 1, 4, 2, &v3)); /* [2, 2, 3] */
	TT_OK(cow_tensor_select(v3, 1, 1, &v4));      /* [2, 3] */
	TT_OK(cow_tensor_narrow(b, 1, 1, 2, &w1));    /* [6, 2] */
	TT_OK(cow_tensor_diagonal(w1, -1, 0, 1, &w2));
	TT_OK(cow_tensor_add_scalar_(v4, 1000));
	TT_OK(cow_tensor_mul_scalar_(w2, -1));
	emit(r, "v4", v4);
	emit(r, "v3", v3);
	emit(r, "v2", v2);
	emit(r, "w2", w2);
	emit(r, "w1", w1);
	emit(r, "b", b);
	emit(r, "v1", v1);
	cow_tensor_release(w2);
	cow_tensor_release(w1);
	cow_tensor_release(v4);
	cow_tensor_release(v3);
	cow_tensor_release(v2);
	cow_tensor_release(v1);
	cow_tensor_release(b);
}

Test(functional, views_of_views)
{
	run3(prog_views_of_views);
}

/* A view made from a parent whose value is stale (a sibling wrote the
 * base, nobody read since): the view must see the sibling's write. */
static void
prog_view_of_stale_parent(struct run *r)
{
	cow_tensor_t *a, *row, *col, *t, *tcol;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT64, 2, (int64_t[]){3, 3}, NULL,
	    &a));
	TT_OK(cow_tensor_select(a, 0, 1, &row));
	TT_OK(cow_tensor_select(a, 1, 2, &col));
	TT_OK(cow_tensor_fill_(row, 7));
	if (functional(r)) {
		cr_assert_neq(info(a).tensor_generation, info(a).generation);
		cr_assert_neq(info(col).tensor_generation,
		    info(col).generation);
	}
	/* Views of stale tensors: no sync happens. */
	TT_OK(cow_tensor_transpose(a, 0, 1, &t));
	TT_OK(cow_tensor_unsqueeze(col, 0, &tcol));
	if (functional(r))
		cr_assert_eq(info(a).pending_updates, 1);
	expect(r, "t", t, (double[]){0, 7, 0, 0, 7, 0, 0, 7, 0});
	expect(r, "tcol", tcol, (double[]){0, 7, 0});
	cow_tensor_release(tcol);
	cow_tensor_release(t);
	cow_tensor_release(col);
	cow_tensor_release(row);
	cow_tensor_release(a);
}

Test(functional, view_made_while_parent_stale)
{
	run3(prog_view_of_stale_parent);
}

/* Overlapping slices written one after the other, all queued (fill_ does
 * not read its destination, so nothing syncs): the updates must be
 * applied in order (the later write wins). */
static void
prog_ordered_updates(struct run *r)
{
	cow_tensor_t *x, *s1, *s2, *s3;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 1, (int64_t[]){16}, NULL, &x));
	TT_OK(cow_tensor_slice(x, 0, 0, 5, 1, &s1));
	TT_OK(cow_tensor_slice(x, 0, 3, 8, 1, &s2));
	TT_OK(cow_tensor_slice(x, 0, 2, 8, 3, &s3));
	TT_OK(cow_tensor_fill_(s1, 1));
	TT_OK(cow_tensor_fill_(s2, 2));
	TT_OK(cow_tensor_fill_(s3, 3));
	if (functional(r)) {
		cr_assert_eq(info(x).pending_updates, 3);
		cr_assert_eq(info(x).generation, 3);
	}
	expect(r, "x", x, (double[]){1, 1, 3, 2, 2, 3, 2, 2, 0, 0, 0, 0, 0, 0,
	    0, 0});
	expect(r, "s1", s1, (double[]){1, 1, 3, 2, 2});
	cow_tensor_release(s3);
	cow_tensor_release(s2);
	cow_tensor_release(s1);
	cow_tensor_release(x);
}

Test(functional, overlapping_updates_apply_in_order)
{
	run3(prog_ordered_updates);
}

/* A write through a view that is released before anyone reads still
 * reaches the base and the other views. */
static void
prog_released_view(struct run *r)
{
	cow_tensor_t *x, *v, *other;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_transpose(x, 0, 1, &v));
	TT_OK(cow_tensor_select(v, 0, 1, &other));
	{
		cow_tensor_t *w;

		TT_OK(cow_tensor_select(x, 0, 1, &w));
		TT_OK(cow_tensor_fill_(w, 9));
		cow_tensor_release(w);
	}
	cow_tensor_release(v);
	if (functional(r))
		cr_assert_eq(info(x).pending_updates, 1);
	expect(r, "x", x, (double[]){0, 1, 2, 9, 9, 9});
	expect(r, "other", other, (double[]){1, 9});
	cow_tensor_release(other);
	cow_tensor_release(x);
}

Test(functional, write_through_released_view_reaches_base)
{
	run3(prog_released_view);
}

/* transpose_ changes only that tensor's path: its siblings keep their
 * shape, and writes through it land where the transposed view points. */
static void
prog_transpose_inplace(struct run *r)
{
	cow_tensor_t *x, *t, *sib;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_narrow(x, 1, 0, 3, &t)); /* an alias of all of x */
	TT_OK(cow_tensor_select(x, 0, 0, &sib));
	transpose_inplace(r, &t, 0, 1);
	tt_assert_shape(t, 2, (int64_t[]){3, 2});
	tt_assert_shape(x, 2, (int64_t[]){2, 3});
	tt_assert_shape(sib, 1, (int64_t[]){3});
	if (functional(r)) {
		/* x itself is a view of arange's flat base. */
		size_t base = info(x).path_length;

		cr_assert_eq(info(t).path_length, base + 2);
		cr_assert_eq(info(sib).path_length, base + 1);
		cr_assert_eq(info(x).generation, 0, "transpose_ is no write");
	}
	{
		cow_tensor_t *row;

		TT_OK(cow_tensor_select(t, 0, 2, &row)); /* x[:, 2] */
		TT_OK(cow_tensor_fill_(row, -5));
		cow_tensor_release(row);
	}
	expect(r, "x", x, (double[]){0, 1, -5, 3, 4, -5});
	expect(r, "t", t, (double[]){0, 3, 1, 4, -5, -5});
	expect(r, "sib", sib, (double[]){0, 1, -5});
	cow_tensor_release(sib);
	cow_tensor_release(t);
	cow_tensor_release(x);
}

Test(functional, transpose_inplace_changes_only_that_tensor)
{
	run3(prog_transpose_inplace);
}

Test(functional, transpose_inplace_refused_on_plain_tensors)
{
	cow_tensor_t *x = arange(2, (int64_t[]){2, 3});

	TT_FAILS(cow_functional_transpose_(x, 0, 1), COW_ENOTSUP,
	    "cow_functional_transpose_");
	TT_FAILS(cow_functional_transpose_(NULL, 0, 1), COW_EINVAL,
	    "cow_functional_transpose_");
	cow_tensor_release(x);
}

/* ------------------------------------------------------------------ */
/* Every op on views, stale inputs and broadcasts.                        */

static void
prog_ops(struct run *r)
{
	cow_tensor_t *a, *b, *row, *col, *e, *s, *n, *m, *sum, *sd, *f, *c;
	bool eq;

	a = arange(2, (int64_t[]){3, 4});
	b = arange(1, (int64_t[]){4});
	TT_OK(cow_tensor_select(a, 0, 2, &row));
	TT_OK(cow_tensor_select(a, 1, 0, &col));
	TT_OK(cow_tensor_add_(row, b));           /* a[2] += b */
	TT_OK(cow_tensor_mul_(a, b));             /* b broadcast over rows */
	TT_OK(cow_tensor_unsqueeze(col, 1, &e));  /* [3, 1] of a stale col */
	TT_OK(cow_tensor_add(a, e, &s));          /* [3, 4] + [3, 1] */
	TT_OK(cow_tensor_neg(row, &n));
	TT_FAILS(cow_tensor_mul(row, col, &m), COW_ESHAPE, "cow_tensor_mul");
	TT_OK(cow_tensor_sum(a, &sum));
	TT_OK(cow_tensor_sum_dim(a, 0, true, &sd));
	TT_OK(cow_tensor_empty(COW_DTYPE_INT32, 2, (int64_t[]){3, 4}, NULL,
	    &f));
	TT_OK(cow_tensor_add_scalar_(a, 0.75));
	TT_OK(cow_tensor_copy_(f, a));            /* float64 -> int32 */
	TT_FAILS(cow_tensor_copy_(col, b), COW_ESHAPE, "cow_tensor_copy_");
	TT_FAILS(cow_tensor_add_(f, a), COW_EDTYPE, "cow_tensor_add_");
	emit(r, "a", a);
	emit(r, "s", s);
	emit(r, "n", n);
	emit(r, "sum", sum);
	emit(r, "sd", sd);
	emit(r, "f", f);
	TT_OK(cow_tensor_clone(row, &c));
	TT_OK(cow_tensor_equal(c, row, &eq));
	cr_assert(eq);
	TT_OK(cow_tensor_set_f64(row, (int64_t[]){1}, 0.5));
	TT_OK(cow_tensor_set_i64(col, (int64_t[]){0}, -3));
	TT_OK(cow_tensor_equal(c, row, &eq));
	cr_assert(!eq);
	emit(r, "c", c);
	emit(r, "a2", a);
	cow_tensor_release(c);
	cow_tensor_release(f);
	cow_tensor_release(sd);
	cow_tensor_release(sum);
	cow_tensor_release(n);
	cow_tensor_release(s);
	cow_tensor_release(e);
	cow_tensor_release(col);
	cow_tensor_release(row);
	cow_tensor_release(b);
	cow_tensor_release(a);
}

Test(functional, ops_on_views_and_stale_tensors)
{
	run3(prog_ops);
}

/* A tensor read as its own operand, and a zero-size view. */
static void
prog_self_and_empty(struct run *r)
{
	cow_tensor_t *a, *v, *z, *zs;

	a = arange(2, (int64_t[]){2, 2});
	TT_OK(cow_tensor_select(a, 0, 1, &v));
	TT_OK(cow_tensor_mul_(v, v));
	TT_OK(cow_tensor_add_(a, a));
	TT_OK(cow_tensor_slice(a, 0, 2, 2, 1, &z));   /* [0, 2] */
	TT_OK(cow_tensor_fill_(z, 5));                /* writes nothing */
	TT_OK(cow_tensor_sum_dim(z, 0, false, &zs));  /* [2] of zeros */
	emit(r, "a", a);
	emit(r, "z", z);
	emit(r, "zs", zs);
	cow_tensor_release(zs);
	cow_tensor_release(z);
	cow_tensor_release(v);
	cow_tensor_release(a);
}

Test(functional, self_operands_and_empty_views)
{
	run3(prog_self_and_empty);
}

/* Writes into overlapping views are refused, as in the strided runtime,
 * and change nothing; one element of an expanded view can be set. */
static void
prog_overlap(struct run *r)
{
	cow_tensor_t *x, *row, *e, *o;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_slice(x, 0, 0, 1, 1, &row));           /* [1, 3] */
	TT_OK(cow_tensor_expand(row, 2, (int64_t[]){4, 3}, &e));
	TT_FAILS(cow_tensor_fill_(e, 1), COW_EOVERLAP, "cow_tensor_fill_");
	TT_FAILS(cow_tensor_add_scalar_(e, 1), COW_EOVERLAP,
	    "cow_tensor_add_scalar_");
	TT_FAILS(cow_tensor_copy_(e, row), COW_EOVERLAP, "cow_tensor_copy_");
	TT_OK(cow_tensor_as_strided(x, 2, (int64_t[]){2, 2},
	    (int64_t[]){1, 1}, 0, &o));
	TT_FAILS(cow_tensor_mul_scalar_(o, 2), COW_EOVERLAP,
	    "cow_tensor_mul_scalar_");
	if (functional(r))
		cr_assert_eq(info(x).generation, 0, "a refused write queued");
	TT_OK(cow_tensor_set_f64(e, (int64_t[]){3, 1}, 42));
	emit(r, "x", x);
	emit(r, "e", e);
	emit(r, "o", o);
	cow_tensor_release(o);
	cow_tensor_release(e);
	cow_tensor_release(row);
	cow_tensor_release(x);
}

Test(functional, writes_to_overlapping_views_refused)
{
	run3(prog_overlap);
}

/* as_strided is absolute over the base: its offset and strides count
 * from the base's first element, whatever view it is taken of (a
 * narrowed and transposed one here, whose own offset is 4). */
static void
prog_as_strided_absolute(struct run *r)
{
	cow_tensor_t *x, *n, *nt, *a;

	x = arange(2, (int64_t[]){4, 4});
	TT_OK(cow_tensor_narrow(x, 0, 1, 2, &n));      /* rows 1-2, offset 4 */
	TT_OK(cow_tensor_transpose(n, 0, 1, &nt));     /* [4, 2] */
	TT_OK(cow_tensor_as_strided(nt, 2, (int64_t[]){2, 2},
	    (int64_t[]){1, 4}, 2, &a));                 /* x[0:2, 2:4]^T */
	expect(r, "a", a, (double[]){2, 6, 3, 7});
	TT_OK(cow_tensor_fill_(a, -1));
	expect(r, "x", x, (double[]){0, 1, -1, -1, 4, 5, -1, -1, 8, 9, 10,
	    11, 12, 13, 14, 15});
	expect(r, "nt", nt, (double[]){4, 8, 5, 9, -1, 10, -1, 11});
	cow_tensor_release(a);
	cow_tensor_release(nt);
	cow_tensor_release(n);
	cow_tensor_release(x);
}

Test(functional, as_strided_is_absolute_over_the_base)
{
	run3(prog_as_strided_absolute);
}

/* ------------------------------------------------------------------ */
/* Copies and reshape.                                                   */

static void
prog_copies(struct run *r)
{
	cow_tensor_t *x, *v, *lc, *c, *lcv;

	x = arange(2, (int64_t[]){3, 3});
	TT_OK(cow_tensor_slice(x, 1, 1, 3, 1, &v));   /* [3, 2] */
	TT_OK(cow_tensor_lazy_clone(v, &lc));          /* no aliasing */
	TT_OK(cow_tensor_clone(v, &c));
	tt_assert_shape(lc, 2, (int64_t[]){3, 2});
	cr_assert_eq(cow_tensor_strides(lc)[0], cow_tensor_strides(v)[0]);
	cr_assert_eq(cow_tensor_offset(lc), cow_tensor_offset(v));
	TT_OK(cow_tensor_fill_(v, 1));
	TT_OK(cow_tensor_select(lc, 1, 0, &lcv));
	TT_OK(cow_tensor_add_scalar_(lcv, 10));
	emit(r, "x", x);
	emit(r, "lc", lc);
	emit(r, "c", c);
	cow_tensor_release(lcv);
	cow_tensor_release(c);
	cow_tensor_release(lc);
	cow_tensor_release(v);
	cow_tensor_release(x);
}

Test(functional, clone_and_lazy_clone_do_not_alias)
{
	run3(prog_copies);
}

/* A lazy clone of a tensor whose own last write is still queued (its value
 * is current, the base is not): the clone must share the written base. A
 * later write through the clone replays its path on that base. (Found by
 * fuzz_functional.) */
static void
prog_lazy_clone_after_queued_write(struct run *r)
{
	cow_tensor_t *x, *c;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_mul_scalar_(x, 10));
	if (functional(r))
		cr_assert_eq(info(x).pending_updates, 1);
	TT_OK(cow_tensor_lazy_clone(x, &c));
	TT_OK(cow_tensor_set_f64(c, (int64_t[]){1, 2}, -1));
	expect(r, "c", c, (double[]){0, 10, 20, 30, 40, -1});
	expect(r, "x", x, (double[]){0, 10, 20, 30, 40, 50});
	cow_tensor_release(c);
	cow_tensor_release(x);
}

Test(functional, lazy_clone_after_a_queued_write)
{
	run3(prog_lazy_clone_after_queued_write);
}

/* MaybeOwned over functional tensors: a contiguous one is borrowed, a
 * transposed view gives an owned contiguous (functional) copy. */
static void
prog_expect_contiguous(struct run *r)
{
	cow_maybe_owned_t a, b;
	cow_tensor_t *x, *t;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_transpose(x, 0, 1, &t));
	TT_OK(cow_tensor_expect_contiguous(x, &a));
	TT_OK(cow_tensor_expect_contiguous(t, &b));
	cr_assert(!cow_maybe_owned_is_owned(&a));
	cr_assert_eq(cow_maybe_owned_get(&a), x);
	cr_assert(cow_maybe_owned_is_owned(&b));
	cr_assert(cow_tensor_is_contiguous(cow_maybe_owned_get(&b)));
	emit(r, "owned", cow_maybe_owned_get(&b));
	/* The copy does not alias: writing t leaves it as it was. */
	TT_OK(cow_tensor_fill_(t, 0));
	emit(r, "owned-after", cow_maybe_owned_get(&b));
	emit(r, "borrowed", cow_maybe_owned_get(&a));
	cow_maybe_owned_release(&b);
	cow_maybe_owned_release(&a);
	cow_tensor_release(t);
	cow_tensor_release(x);
}

Test(functional, expect_contiguous_borrows_or_copies)
{
	run3(prog_expect_contiguous);
}

static cow_reshape_mode_t cur_mode;

static void
prog_reshape(struct run *r)
{
	cow_tensor_t *x, *v, *t, *tv;

	x = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_reshape(x, 1, (int64_t[]){6}, &v));  /* viewable */
	TT_OK(cow_tensor_transpose(x, 0, 1, &t));
	TT_OK(cow_tensor_reshape(t, 1, (int64_t[]){-1}, &tv)); /* a copy */
	TT_OK(cow_tensor_fill_(v, 3));
	TT_OK(cow_tensor_add_scalar_(tv, 1));
	emit(r, "x", x);
	emit(r, "v", v);
	emit(r, "tv", tv);
	cow_tensor_release(tv);
	cow_tensor_release(t);
	cow_tensor_release(v);
	cow_tensor_release(x);
}

Test(functional, reshape_in_alias_and_lazy_copy_modes)
{
	static const cow_reshape_mode_t modes[] = {COW_RESHAPE_ALIAS,
	    COW_RESHAPE_LAZY_COPY};
	cow_reshape_mode_t prev;

	for (size_t i = 0; i < 2; i++) {
		cur_mode = modes[i];
		TT_OK(cow_reshape_mode_set_thread(cur_mode, &prev));
		run3(prog_reshape);
		TT_OK(cow_reshape_mode_set_thread(prev, NULL));
	}
}

/* ------------------------------------------------------------------ */
/* The memory bound.                                                     */

static void
assert_bounded(const cow_tensor_t *t)
{
	cow_functional_info_t i = info(t);

	cr_assert_leq(i.pending_updates, COW_FUNCTIONAL_MAX_UPDATES);
	cr_assert_leq(i.pending_bytes, i.base_bytes, "%zu pending bytes, "
	    "base %zu", i.pending_bytes, i.base_bytes);
}

/* Writes through many different paths and nothing reads (fill_ and copy_
 * do not read their destination): the queue stays within its bound
 * (eager flushes), and the values are right. An in-place op that reads
 * its destination (add_) syncs it first, which applies the queue. */
static void
prog_many_paths(struct run *r)
{
	enum { ROWS = 64, COLS = 4 };
	cow_tensor_t *x, *row;

	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, (int64_t[]){ROWS, COLS},
	    NULL, &x));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < ROWS; i++) {
			TT_OK(cow_tensor_select(x, 0, i, &row));
			TT_OK(cow_tensor_fill_(row, i + round));
			cow_tensor_release(row);
			if (functional(r))
				assert_bounded(x);
		}
	}
	if (functional(r)) {
		cr_assert_geq(info(x).eager_flushes, 3 * ROWS /
		    (COW_FUNCTIONAL_MAX_UPDATES + 1));
		cr_assert_eq(info(x).updates_applied +
		    info(x).pending_updates, 3 * ROWS);
		cr_assert_eq(info(x).generation, 3 * ROWS);
	}
	emit(r, "x", x);
	cow_tensor_release(x);
}

Test(functional, update_queue_bounded_by_count)
{
	run3(prog_many_paths);
}

/* Few updates but large ones: bounded by the base's bytes. */
static void
prog_large_updates(struct run *r)
{
	cow_tensor_t *x, *top, *all, *src;

	src = arange(1, (int64_t[]){8});
	TT_OK(cow_tensor_zeros(COW_DTYPE_FLOAT64, 2, (int64_t[]){8, 8}, NULL,
	    &x));
	TT_OK(cow_tensor_narrow(x, 0, 0, 6, &top));
	TT_OK(cow_tensor_narrow(x, 1, 0, 8, &all));
	for (int i = 0; i < 5; i++) {
		TT_OK(cow_tensor_fill_(top, i));
		if (functional(r))
			assert_bounded(x);
		TT_OK(cow_tensor_copy_(all, src)); /* broadcast over rows */
		if (functional(r))
			assert_bounded(x);
		TT_OK(cow_tensor_fill_(top, -i));
		if (functional(r))
			assert_bounded(x);
	}
	if (functional(r))
		cr_assert_gt(info(x).eager_flushes, 0);
	emit(r, "x", x);
	cow_tensor_release(src);
	cow_tensor_release(all);
	cow_tensor_release(top);
	cow_tensor_release(x);
}

Test(functional, update_queue_bounded_by_bytes)
{
	run3(prog_large_updates);
}

/* Writes through one path (the same view, or another view with the same
 * path) replace each other's update instead of growing the queue. */
static void
prog_coalesce(struct run *r)
{
	cow_tensor_t *x, *v, *w;

	TT_OK(cow_tensor_zeros(COW_DTYPE_INT64, 1, (int64_t[]){100}, NULL,
	    &x));
	TT_OK(cow_tensor_slice(x, 0, 10, 20, 1, &v));
	TT_OK(cow_tensor_slice(x, 0, 10, 20, 1, &w));
	for (int i = 0; i < 50; i++) {
		TT_OK(cow_tensor_fill_(v, i));
		TT_OK(cow_tensor_fill_(w, 1000 + i));
	}
	if (functional(r)) {
		cr_assert_eq(info(x).pending_updates, 1);
		cr_assert_eq(info(x).updates_coalesced, 99);
		cr_assert_eq(info(x).eager_flushes, 0);
	}
	emit(r, "x", x);
	emit(r, "v", v);
	cow_tensor_release(w);
	cow_tensor_release(v);
	cow_tensor_release(x);
}

Test(functional, writes_through_one_path_coalesce)
{
	run3(prog_coalesce);
}

/* ------------------------------------------------------------------ */
/* Boundaries: wrap, to_plain, mixing, refused access, lazy copies.       */

Test(functional, wrap_and_to_plain_share_bytes_on_the_strided_backend)
{
	enum { N = 1 << 18 }; /* 1 MiB of float32 */
	cow_allocator_t *def = cow_allocator_default();
	cow_tensor_t *p, *f, *part, *back;
	cow_stats_t s0, s1;
	uint64_t live0;

	TT_OK(cow_tensor_arange(COW_DTYPE_FLOAT32, N, NULL, &p));
	cow_stats_get(&s0);
	live0 = cow_test_alloc_stats(def).live_bytes;
	TT_OK(cow_functional_wrap(p, cow_backend_strided(), &f));
	cr_assert(cow_tensor_is_functional(f));
	cr_assert(!cow_tensor_is_functional(p));
	cr_assert_null(cow_tensor_storage(f));
	cr_assert_eq(cow_functional_backend(f), cow_backend_strided());
	/* A view, a read and the export copy nothing. */
	TT_OK(cow_tensor_narrow(f, 0, 1000, 1000, &part));
	cr_assert_eq(tt_get(part, (int64_t[]){6}), 1006.0);
	TT_OK(cow_functional_to_plain(part, &back));
	cr_assert(!cow_tensor_is_functional(back));
	cr_assert(cow_storage_shares_data(cow_tensor_storage(back),
	    cow_tensor_storage(p)));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied, s0.bytes_copied);
	cr_assert_lt(cow_test_alloc_stats(def).live_bytes - live0, 16384,
	    "wrap, view, read and to_plain allocated %llu bytes",
	    (unsigned long long)(cow_test_alloc_stats(def).live_bytes -
	    live0));
	/* The first write copies the base once; the plain tensors keep
	 * their values. */
	TT_OK(cow_tensor_fill_(part, -1));
	cr_assert_eq(tt_get(f, (int64_t[]){1006}), -1.0);
	cr_assert_eq(tt_get(p, (int64_t[]){1006}), 1006.0);
	cr_assert_eq(tt_get(back, (int64_t[]){6}), 1006.0);
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4);
	cow_tensor_release(back);
	cow_tensor_release(part);
	cow_tensor_release(f);
	cow_tensor_release(p);
}

Test(functional, wrap_onto_the_opaque_backend_and_back)
{
	cow_tensor_t *p, *f, *t, *back, *again;
	bool eq;

	p = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_tensor_transpose(p, 0, 1, &t));
	TT_OK(cow_functional_wrap(t, cow_backend_opaque_test(), &f));
	cr_assert_eq(cow_functional_backend(f), cow_backend_opaque_test());
	tt_assert_shape(f, 2, (int64_t[]){3, 2});
	cr_assert(cow_tensor_is_contiguous(f), "a wrapped tensor is a base");
	TT_OK(cow_functional_to_plain(f, &back));
	TT_OK(cow_tensor_equal(back, t, &eq));
	cr_assert(eq);
	/* Wrapping a functional tensor on its own backend clones it; on
	 * another backend it is refused. */
	TT_OK(cow_functional_wrap(f, cow_backend_opaque_test(), &again));
	TT_OK(cow_tensor_equal(again, f, &eq));
	cr_assert(eq);
	cow_tensor_release(again);
	again = NULL;
	TT_FAILS(cow_functional_wrap(f, cow_backend_strided(), &again),
	    COW_EINVAL, "backend opaque_test, not strided");
	cr_assert_null(again);
	/* A plain tensor gives a lazy clone of itself. */
	cow_tensor_release(back);
	TT_OK(cow_functional_to_plain(p, &back));
	cr_assert(cow_storage_shares_data(cow_tensor_storage(back),
	    cow_tensor_storage(p)));
	cow_tensor_release(back);
	cow_tensor_release(f);
	cow_tensor_release(t);
	cow_tensor_release(p);
}

Test(functional, mixing_plain_and_functional_operands)
{
	cow_tensor_t *p, *f, *s, *q;

	p = arange(1, (int64_t[]){4});
	TT_OK(cow_functional_wrap(p, cow_backend_opaque_test(), &f));
	/* functional + plain: a functional result on f's backend. */
	TT_OK(cow_tensor_add(p, f, &s));
	cr_assert_eq(cow_functional_backend(s), cow_backend_opaque_test());
	tt_assert_values(s, (double[]){0, 2, 4, 6});
	/* A plain destination written from a functional source stays
	 * plain. */
	TT_OK(cow_tensor_add_(p, s));
	cr_assert(!cow_tensor_is_functional(p));
	tt_assert_values(p, (double[]){0, 3, 6, 9});
	/* Two functional backends cannot be mixed. */
	{
		cow_tensor_t *g = NULL;

		TT_OK(cow_functional_wrap(p, cow_backend_strided(), &g));
		q = NULL;
		TT_FAILS(cow_tensor_mul(f, g, &q), COW_EINVAL,
		    "cannot be mixed");
		cr_assert_null(q);
		TT_FAILS(cow_tensor_copy_(g, f), COW_EINVAL,
		    "cannot be mixed");
		cow_tensor_release(g);
	}
	cow_tensor_release(s);
	cow_tensor_release(f);
	cow_tensor_release(p);
}

Test(functional, memory_access_of_functional_tensors)
{
	cow_tensor_t *p, *f, *t;
	const double *d;
	void *w = NULL;

	p = arange(2, (int64_t[]){2, 3});
	TT_OK(cow_functional_wrap(p, cow_backend_strided(), &f));
	TT_FAILS(cow_tensor_mutable_data(f, &w), COW_ENOTSUP,
	    "cow_tensor_mutable_data");
	cr_assert_null(w);
	/* const data of a transposed view: its values in row-major order. */
	TT_OK(cow_tensor_transpose(f, 0, 1, &t));
	d = cow_tensor_const_data(t);
	cr_assert_not_null(d, "%s", cow_last_error());
	for (int k = 0; k < 6; k++)
		cr_assert_eq(d[k], (double)((k % 2) * 3 + k / 2));
	cr_assert_eq(cow_functional_sync(p), COW_OK, "plain: nothing to do");
	TT_OK(cow_functional_sync(t));
	TT_FAILS(cow_functional_sync(NULL), COW_EINVAL,
	    "cow_functional_sync");
	{
		cow_functional_info_t i;

		TT_FAILS(cow_functional_info(p, &i), COW_EINVAL,
		    "not functional");
	}
	cow_tensor_release(t);
	cow_tensor_release(f);
	cow_tensor_release(p);
}

Test(functional, backends_and_modes)
{
	const cow_backend_t *prev;
	bool mode;
	cow_tensor_t *t;

	cr_assert_str_eq(cow_backend_name(cow_backend_strided()), "strided");
	cr_assert_str_eq(cow_backend_name(cow_backend_opaque_test()),
	    "opaque_test");
	cr_assert_str_eq(cow_backend_name(NULL), "none");
	cr_assert(!cow_backend_needs_functionalization(cow_backend_strided()));
	cr_assert(cow_backend_needs_functionalization(
	    cow_backend_opaque_test()));
	cr_assert(!cow_backend_needs_functionalization(NULL));
	cr_assert_eq(cow_backend_get_thread(), cow_backend_strided());
	cr_assert(!cow_functional_mode_get_thread());
	/* Neither the mode nor a backend that needs it: plain tensors. */
	TT_OK(cow_tensor_zeros(COW_DTYPE_BOOL, 0, NULL, NULL, &t));
	cr_assert(!cow_tensor_is_functional(t));
	cr_assert_null(cow_functional_backend(t));
	cow_tensor_release(t);
	/* The opaque backend needs the layer: every creation is functional. */
	TT_OK(cow_backend_set_thread(cow_backend_opaque_test(), &prev));
	cr_assert_eq(prev, cow_backend_strided());
	TT_OK(cow_tensor_arange(COW_DTYPE_UINT8, 3, NULL, &t));
	cr_assert(cow_tensor_is_functional(t));
	cr_assert_eq(cow_functional_backend(t), cow_backend_opaque_test());
	cow_tensor_release(t);
	TT_OK(cow_backend_set_thread(NULL, &prev));
	cr_assert_eq(prev, cow_backend_opaque_test());
	cr_assert_eq(cow_backend_get_thread(), cow_backend_strided());
	/* The mode makes strided-backend creations functional. */
	TT_OK(cow_functional_mode_set_thread(true, &mode));
	cr_assert(!mode);
	TT_OK(cow_tensor_full(COW_DTYPE_INT32, 1, (int64_t[]){2}, 7, NULL,
	    &t));
	cr_assert_eq(cow_functional_backend(t), cow_backend_strided());
	tt_assert_values(t, (double[]){7, 7});
	cow_tensor_release(t);
	/* Creation errors are the plain functions' errors. */
	t = NULL;
	TT_FAILS(cow_tensor_zeros(COW_DTYPE_INT32, 1, (int64_t[]){-1}, NULL,
	    &t), COW_EINVAL, "size -1 at dim 0 is negative");
	cr_assert_null(t);
	TT_OK(cow_functional_mode_set_thread(false, &mode));
	cr_assert(mode);
}

/* ------------------------------------------------------------------ */
/* Tensors over one storage (issue 15): cow_tensor_from_storage makes    */
/* tensors that alias, in every way, and the writes reach the storage.   */

/* Element @k of @s's bytes read as @dtype (float32, float64 or uint8). */
static double
storage_elem(const cow_storage_t *s, cow_dtype_t dtype, int64_t k)
{
	const unsigned char *p = cow_storage_const_data(s);
	float f;
	double d;

	switch (dtype) {
	case COW_DTYPE_FLOAT32:
		memcpy(&f, p + k * 4, 4);
		return f;
	case COW_DTYPE_FLOAT64:
		memcpy(&d, p + k * 8, 8);
		return d;
	default:
		return p[k];
	}
}

/* Record (and, with @want, assert) the storage's first @n elements of
 * @dtype: the bytes themselves, read without any tensor. */
static void
expect_storage(struct run *r, const char *name, const cow_storage_t *s,
    cow_dtype_t dtype, int64_t n, const double *want)
{
	struct output *o;

	cr_assert_lt(r->n, MAX_OUT);
	cr_assert_leq(n, MAX_VALUES);
	cr_assert_geq(cow_storage_nbytes(s), (size_t)n * cow_dtype_size(dtype));
	o = &r->out[r->n++];
	snprintf(o->name, sizeof o->name, "%s", name);
	o->ndim = 1;
	o->sizes[0] = o->numel = n;
	for (int64_t k = 0; k < n; k++) {
		o->v[k] = storage_elem(s, dtype, k);
		if (want != NULL)
			cr_assert(o->v[k] == want[k], "%s: %s[%lld] = %g, want "
			    "%g", way_name[r->way], name, (long long)k,
			    o->v[k], want[k]);
	}
}

/* A private storage holding @n float64 values 0, 1, ..., n - 1. */
static cow_storage_t *
storage_f64(int64_t n)
{
	cow_storage_t *s;
	double *p;

	TT_OK(cow_storage_new((size_t)n * 8, NULL, &s));
	TT_OK(cow_storage_mutable_data(s, (void **)&p));
	for (int64_t k = 0; k < n; k++)
		p[k] = (double)k;
	return s;
}

/* The repro: two float32 [4] tensors over one 16-byte storage,
 * fill_(t1, 3): t2 and the storage see it (the storage before any read,
 * and after the release of both). */
static void
prog_storage_repro(struct run *r)
{
	static const double three[] = {3, 3, 3, 3};
	cow_tensor_t *t1, *t2;
	cow_storage_t *s;

	TT_OK(cow_storage_new(16, NULL, &s));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){4},
	    NULL, 0, &t1));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){4},
	    NULL, 0, &t2));
	TT_OK(cow_tensor_fill_(t1, 3));
	if (functional(r))
		cr_assert_eq(info(t1).pending_updates, 1, "the write is "
		    "queued, and yet (below) in the storage");
	expect_storage(r, "storage", s, COW_DTYPE_FLOAT32, 4, three);
	expect(r, "t2", t2, three);
	cow_tensor_release(t1);
	cow_tensor_release(t2);
	expect_storage(r, "storage-released", s, COW_DTYPE_FLOAT32, 4, three);
	cow_storage_release(s);
}

Test(functional, tensors_over_one_storage_alias)
{
	run3(prog_storage_repro);
}

/*
 * Different sizes, strides and offsets over one storage of 12 float64
 * (0..11): a [3, 4] matrix, its transpose, a 2x2 block at offset 5, every
 * other element, a 0-element tensor. Each reports the strided runtime's
 * layout; writes through each are seen by all and by the storage;
 * as_strided of one of them is absolute over the storage; a tensor made
 * after the writes (while they are queued) sees them.
 */
static void
prog_storage_layouts(struct run *r)
{
	cow_tensor_t *a, *b, *c, *d, *z, *col, *e, *f;
	cow_storage_t *s = storage_f64(12);

	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){3, 4}, NULL, 0, &a));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){4, 3}, (int64_t[]){1, 4}, 0, &b));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 2}, (int64_t[]){4, 1}, 5, &c));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){6}, (int64_t[]){2}, 0, &d));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){0}, NULL, 12, &z));
	cr_assert_eq(cow_tensor_strides(b)[0], 1);
	cr_assert_eq(cow_tensor_strides(b)[1], 4);
	cr_assert(!cow_tensor_is_contiguous(b));
	cr_assert_eq(cow_tensor_offset(c), 5);
	cr_assert_eq(cow_tensor_strides(c)[0], 4);
	cr_assert_eq(cow_tensor_strides(d)[0], 2);
	expect(r, "c", c, (double[]){5, 6, 9, 10});
	TT_OK(cow_tensor_fill_(c, -1));                 /* a[1:3, 1:3] */
	TT_OK(cow_tensor_add_scalar_(d, 100));          /* even elements */
	TT_OK(cow_tensor_select(b, 0, 3, &col));        /* a[:, 3] */
	TT_OK(cow_tensor_mul_scalar_(col, 2));
	TT_OK(cow_tensor_set_f64(b, (int64_t[]){2, 1}, 7)); /* a[1][2] */
	TT_OK(cow_tensor_fill_(z, 5));                  /* nothing */
	TT_OK(cow_tensor_as_strided(c, 1, (int64_t[]){3}, (int64_t[]){4}, 3,
	    &e));                                       /* a[:, 3] again */
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 6}, NULL, 0, &f));
	expect(r, "a", a, (double[]){100, 1, 102, 6, 104, -1, 7, 14, 108, -1,
	    99, 22});
	emit(r, "b", b);
	expect(r, "c-after", c, (double[]){-1, 7, -1, 99});
	expect(r, "d", d, (double[]){100, 102, 104, 7, 108, 99});
	expect(r, "col", col, (double[]){6, 14, 22});
	expect(r, "e", e, (double[]){6, 14, 22});
	expect(r, "f", f, (double[]){100, 1, 102, 6, 104, -1, 7, 14, 108, -1,
	    99, 22});
	emit(r, "z", z);
	expect_storage(r, "storage", s, COW_DTYPE_FLOAT64, 12,
	    (double[]){100, 1, 102, 6, 104, -1, 7, 14, 108, -1, 99, 22});
	cow_tensor_release(f);
	cow_tensor_release(e);
	cow_tensor_release(col);
	cow_tensor_release(z);
	cow_tensor_release(d);
	cow_tensor_release(c);
	cow_tensor_release(b);
	cow_tensor_release(a);
	cow_storage_release(s);
}

Test(functional, tensors_over_one_storage_with_different_layouts)
{
	run3(prog_storage_layouts);
}

/*
 * Creation and release in any order: a group whose only tensor is released
 * with its write still queued (nobody read it) has written the storage; a
 * later tensor over it starts from those bytes; a view that outlives every
 * tensor made from the storage keeps the group, and a new tensor joins it.
 */
static void
prog_storage_orders(struct run *r)
{
	cow_tensor_t *t1, *t2, *t3, *v, *t4;
	cow_storage_t *s = storage_f64(4);

	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){4},
	    NULL, 0, &t1));
	TT_OK(cow_tensor_fill_(t1, 1));
	cow_tensor_release(t1);
	expect_storage(r, "storage-1", s, COW_DTYPE_FLOAT64, 4,
	    (double[]){1, 1, 1, 1});
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){2},
	    NULL, 2, &t2));
	TT_OK(cow_tensor_add_scalar_(t2, 5));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){4},
	    NULL, 0, &t3));
	cow_tensor_release(t2);
	expect(r, "t3", t3, (double[]){1, 1, 6, 6});
	TT_OK(cow_tensor_mul_scalar_(t3, 2));
	TT_OK(cow_tensor_narrow(t3, 0, 1, 2, &v));
	cow_tensor_release(t3);
	TT_OK(cow_tensor_add_scalar_(v, 10));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1, (int64_t[]){4},
	    NULL, 0, &t4));
	expect(r, "t4", t4, (double[]){2, 12, 22, 12});
	TT_OK(cow_tensor_fill_(t4, 0));
	expect(r, "v", v, (double[]){0, 0});
	cow_tensor_release(t4);
	cow_tensor_release(v);
	expect_storage(r, "storage-2", s, COW_DTYPE_FLOAT64, 4,
	    (double[]){0, 0, 0, 0});
	cow_storage_release(s);
}

Test(functional, tensors_over_one_storage_in_any_order)
{
	run3(prog_storage_orders);
}

/*
 * When the storage holds the writes: as soon as the in-place op returns,
 * so also after cow_functional_sync of any tensor of the group and after
 * the release of its last tensor. The write is still queued in the group
 * when the storage already has it.
 */
static void
prog_storage_when(struct run *r)
{
	cow_tensor_t *t1, *t2, *row;
	cow_storage_t *s = storage_f64(6);

	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 3}, NULL, 0, &t1));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 1,
	    (int64_t[]){6}, NULL, 0, &t2));
	TT_OK(cow_tensor_select(t1, 0, 1, &row));
	TT_OK(cow_tensor_add_scalar_(row, 10));
	if (functional(r)) {
		cr_assert_eq(info(t2).pending_updates, 1);
		cr_assert_neq(info(t2).tensor_generation, info(t2).generation);
	}
	expect_storage(r, "after-write", s, COW_DTYPE_FLOAT64, 6,
	    (double[]){0, 1, 2, 13, 14, 15});
	TT_OK(cow_functional_sync(t2));
	expect_storage(r, "after-sync", s, COW_DTYPE_FLOAT64, 6,
	    (double[]){0, 1, 2, 13, 14, 15});
	TT_OK(cow_tensor_fill_(t2, 4));
	cow_tensor_release(row);
	cow_tensor_release(t1);
	cow_tensor_release(t2);
	expect_storage(r, "after-release", s, COW_DTYPE_FLOAT64, 6,
	    (double[]){4, 4, 4, 4, 4, 4});
	cow_storage_release(s);
}

Test(functional, writes_reach_the_storage_at_once)
{
	run3(prog_storage_when);
}

/*
 * The storage's bytes that no tensor of the dtype can reach stay as they
 * were: 10 bytes hold two float32 and two more bytes. A lazy clone of the
 * storage taken before, and lazy clones or clones of the tensors taken
 * after, do not alias the storage.
 */
static void
prog_storage_copies(struct run *r)
{
	cow_tensor_t *t, *lc, *c;
	cow_storage_t *s, *before;
	unsigned char *p;

	TT_OK(cow_storage_new(10, NULL, &s));
	TT_OK(cow_storage_mutable_data(s, (void **)&p));
	memset(p, 0, 8);
	p[8] = 0xab;
	p[9] = 0xcd;
	TT_OK(cow_storage_lazy_clone(s, &before));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){2},
	    NULL, 0, &t));
	TT_OK(cow_tensor_fill_(t, 2));
	TT_OK(cow_tensor_lazy_clone(t, &lc));
	TT_OK(cow_tensor_clone(t, &c));
	TT_OK(cow_tensor_fill_(lc, 8));
	TT_OK(cow_tensor_fill_(c, 9));
	expect(r, "t", t, (double[]){2, 2});
	expect(r, "lc", lc, (double[]){8, 8});
	expect_storage(r, "storage-f32", s, COW_DTYPE_FLOAT32, 2,
	    (double[]){2, 2});
	expect_storage(r, "storage-bytes", s, COW_DTYPE_UINT8, 10,
	    (double[]){0, 0, 0, 64, 0, 0, 0, 64, 0xab, 0xcd});
	expect_storage(r, "before", before, COW_DTYPE_UINT8, 10,
	    (double[]){0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd});
	cow_tensor_release(c);
	cow_tensor_release(lc);
	cow_tensor_release(t);
	cow_storage_release(before);
	cow_storage_release(s);
}

Test(functional, storage_copies_and_unreachable_bytes)
{
	run3(prog_storage_copies);
}

/* A copy within one dtype copies the bytes (ops.h): bool bytes other than
 * 0 and 1 in a caller's storage reach the storage as they are, in every
 * way. (Found by fuzz_functional once it compared storages.) */
static void
prog_storage_bool_bytes(struct run *r)
{
	cow_tensor_t *t, *u;
	cow_storage_t *s;
	unsigned char *p;

	TT_OK(cow_storage_new(4, NULL, &s));
	TT_OK(cow_storage_mutable_data(s, (void **)&p));
	memcpy(p, (unsigned char[]){5, 0, 0, 0xff}, 4);
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_BOOL, 1, (int64_t[]){2},
	    NULL, 0, &t));
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_BOOL, 1, (int64_t[]){2},
	    NULL, 2, &u));
	expect(r, "u", u, (double[]){0, 1});
	TT_OK(cow_tensor_copy_(u, t));
	expect(r, "u-after", u, (double[]){1, 0});
	expect_storage(r, "storage", s, COW_DTYPE_UINT8, 4,
	    (double[]){5, 0, 5, 0});
	cow_tensor_release(u);
	cow_tensor_release(t);
	cow_storage_release(s);
}

Test(functional, copies_within_one_dtype_keep_the_bytes)
{
	run3(prog_storage_bool_bytes);
}

/* The cost on the strided backend: making the group copies nothing (its
 * base is a lazy clone of the storage); the group's first write
 * materialises the storage (one copy of it: the base still shares its
 * bytes), later writes copy nothing more (their elements go into the now
 * private storage); applying a write through a narrow view of the
 * whole-storage tensor copies the base once, as in any group (its path is
 * the narrow alone, not as_strided then narrow). */
Test(functional, storage_group_copies_on_the_strided_backend)
{
	enum { N = 1 << 18 }; /* 1 MiB of float32 */
	cow_tensor_t *t, *part;
	const cow_backend_t *be;
	cow_stats_t s0, s1;
	cow_storage_t *s;
	bool mode;

	TT_OK(cow_storage_new((size_t)N * 4, NULL, &s));
	way_enter(FN_STRIDED, &be, &mode);
	cow_stats_get(&s0);
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1, (int64_t[]){N},
	    NULL, 0, &t));
	TT_OK(cow_tensor_narrow(t, 0, 1000, 1000, &part));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied, s0.bytes_copied);
	TT_OK(cow_tensor_fill_(part, -1));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4);
	TT_OK(cow_tensor_fill_(part, -2));
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4);
	cr_assert_eq(storage_elem(s, COW_DTYPE_FLOAT32, 1006), -2.0);
	cr_assert_eq(tt_get(t, (int64_t[]){1006}), -2.0);
	cow_stats_get(&s1);
	cr_assert_eq(s1.bytes_copied - s0.bytes_copied, (uint64_t)N * 4 * 2);
	cow_tensor_release(part);
	cow_tensor_release(t);
	way_leave(be, mode);
	cow_storage_release(s);
}

/* Functional only: one group per storage has one dtype and one backend.
 * A tensor of another dtype (or on another backend) over a storage whose
 * group lives is refused, changing nothing; once every tensor of the group
 * (views included) is released, it is made, and reads the bytes as the
 * strided runtime does. */
Test(functional, one_dtype_and_backend_per_storage_group)
{
	static const enum way ways[] = {FN_STRIDED, FN_OPAQUE};

	for (size_t w = 0; w < 2; w++) {
		cow_tensor_t *f, *v, *i = NULL;
		const cow_backend_t *be;
		cow_storage_t *s;
		bool mode;
		float x = 1.5f;
		int32_t bits;

		way_enter(ways[w], &be, &mode);
		TT_OK(cow_storage_new(16, NULL, &s));
		TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1,
		    (int64_t[]){4}, NULL, 0, &f));
		TT_OK(cow_tensor_select(f, 0, 1, &v));
		TT_OK(cow_tensor_fill_(v, x));
		TT_FAILS(cow_tensor_from_storage(s, COW_DTYPE_INT32, 1,
		    (int64_t[]){4}, NULL, 0, &i), COW_EDTYPE,
		    "cow_tensor_from_storage: the storage already has "
		    "functional tensors of dtype float32, not int32");
		cr_assert_null(i);
		/* Another backend (the other functional way's). */
		TT_OK(cow_backend_set_thread(ways[w] == FN_OPAQUE ?
		    cow_backend_strided() : cow_backend_opaque_test(), NULL));
		TT_OK(cow_functional_mode_set_thread(true, NULL));
		TT_FAILS(cow_tensor_from_storage(s, COW_DTYPE_FLOAT32, 1,
		    (int64_t[]){4}, NULL, 0, &i), COW_EINVAL,
		    "functional tensors on backend");
		cr_assert_null(i);
		way_enter(ways[w], NULL, NULL);
		cow_tensor_release(f);
		/* The view keeps the group. */
		TT_FAILS(cow_tensor_from_storage(s, COW_DTYPE_INT32, 1,
		    (int64_t[]){4}, NULL, 0, &i), COW_EDTYPE, "dtype float32");
		cow_tensor_release(v);
		TT_OK(cow_tensor_from_storage(s, COW_DTYPE_INT32, 1,
		    (int64_t[]){4}, NULL, 0, &i));
		memcpy(&bits, &x, 4);
		tt_assert_values(i, (double[]){0, bits, 0, 0});
		cow_tensor_release(i);
		cow_storage_release(s);
		way_leave(be, mode);
	}
}

/* The trace shows the storage as the program's input, and each tensor
 * over it as its as_strided copy. */
Test(functional, storage_trace)
{
	cow_functional_trace_t *tr;
	const cow_backend_t *be;
	unsigned long long in;
	const char *line;
	cow_storage_t *s;
	cow_tensor_t *t;
	bool mode;

	way_enter(FN_OPAQUE, &be, &mode);
	TT_OK(cow_storage_new(48, NULL, &s));
	TT_OK(cow_functional_trace_start());
	TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
	    (int64_t[]){2, 2}, (int64_t[]){1, 2}, 1, &t));
	TT_OK(cow_functional_trace_stop(&tr));
	line = trace_find(tr, "= from_storage(float64, [6])");
	cr_assert_not_null(line);
	cr_assert_eq(sscanf(line, "%%%llu", &in), 1);
	cr_assert_not_null(trace_find(tr, "= as_strided_copy(%%%llu, size=[2, 2], "
	    "stride=[1, 2], offset=1)",
	    in));
	cow_functional_trace_free(tr);
	cow_tensor_release(t);
	cow_storage_release(s);
	way_leave(be, mode);
}

/* ------------------------------------------------------------------ */
/* Allocation failures: a failed call returns COW_ENOMEM, changes no      */
/* value anyone can read, leaks nothing; the retry succeeds.              */

static cow_allocator_t *fa;

/* The state every walk step starts from: x [4, 4] with a pending write
 * through a row, a stale column view. */
struct fstate {
	cow_tensor_t *x, *row, *col;
};

static void
fstate_make(struct fstate *s, const cow_backend_t *be)
{
	cow_tensor_t *p;

	p = tt_arange(COW_DTYPE_INT64, 2, (int64_t[]){4, 4}, fa);
	TT_OK(cow_functional_wrap(p, be, &s->x));
	cow_tensor_release(p);
	TT_OK(cow_tensor_select(s->x, 0, 1, &s->row));
	TT_OK(cow_tensor_select(s->x, 1, 2, &s->col));
	TT_OK(cow_tensor_fill_(s->row, -1));
}

static void
fstate_free(struct fstate *s)
{
	cow_tensor_release(s->col);
	cow_tensor_release(s->row);
	cow_tensor_release(s->x);
}

/* What x holds after the op: unchanged, or written by it. */
enum fwrite { F_NONE, F_COL_ADD, F_COL_SET };

static void
fstate_check(const struct fstate *s, enum fwrite w)
{
	static const double x0[] = {0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11,
	    12, 13, 14, 15};
	double want[16];

	memcpy(want, x0, sizeof want);
	if (w == F_COL_ADD)
		for (int i = 0; i < 4; i++)
			want[i * 4 + 2] += 100;
	if (w == F_COL_SET)
		want[3 * 4 + 2] = 7;
	tt_assert_values(s->x, want);
}

typedef cow_status_t (*fop)(struct fstate *s, cow_tensor_t **made);

static cow_status_t
fop_col_add(struct fstate *s, cow_tensor_t **made)
{
	(void)made;
	return cow_tensor_add_scalar_(s->col, 100);
}

static cow_status_t
fop_sync(struct fstate *s, cow_tensor_t **made)
{
	(void)made;
	return cow_functional_sync(s->col);
}

static cow_status_t
fop_view(struct fstate *s, cow_tensor_t **made)
{
	return cow_tensor_diagonal(s->x, 0, 0, 1, made);
}

static cow_status_t
fop_sum(struct fstate *s, cow_tensor_t **made)
{
	return cow_tensor_sum_dim(s->col, 0, true, made);
}

static cow_status_t
fop_lazy_clone(struct fstate *s, cow_tensor_t **made)
{
	return cow_tensor_lazy_clone(s->row, made);
}

static cow_status_t
fop_set(struct fstate *s, cow_tensor_t **made)
{
	(void)made;
	return cow_tensor_set_i64(s->col, (int64_t[]){3}, 7);
}

static void
walk(fop op, enum fwrite writes)
{
	static const enum way ways[] = {FN_STRIDED, FN_OPAQUE};

	for (size_t w = 0; w < 2; w++) {
		const cow_backend_t *be = ways[w] == FN_OPAQUE ?
		    cow_backend_opaque_test() : cow_backend_strided();
		int failures = 0;

		for (uint64_t k = 1;; k++) {
			struct fstate s;
			cow_tensor_t *made = NULL;
			cow_status_t st;

			fstate_make(&s, be);
			TT_OK(cow_allocator_fault_fail_nth(fa, k));
			st = op(&s, &made);
			TT_OK(cow_allocator_fault_disarm(fa));
			if (st == COW_OK) {
				fstate_check(&s, writes);
				cow_tensor_release(made);
				fstate_free(&s);
				break;
			}
			cr_assert_eq(st, COW_ENOMEM, "%s: allocation %llu: %s",
			    way_name[ways[w]], (unsigned long long)k,
			    cow_status_str(st));
			cr_assert_null(made, "out written on failure");
			cr_assert_str_not_empty(cow_last_error());
			fstate_check(&s, F_NONE);
			failures++;
			fstate_free(&s);
		}
		cr_assert_gt(failures, 0, "no allocation point was walked");
	}
}

static void
fault_setup(void)
{
	TT_OK(cow_allocator_fault_new(cow_allocator_system(), &fa));
}

static void
fault_teardown(void)
{
	cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, 0, "leak");
	TT_OK(cow_allocator_destroy(fa));
}

TestSuite(functional_faults, .init = fault_setup, .fini = fault_teardown,
    .timeout = 60.0);

Test(functional_faults, inplace_op_through_a_stale_view)
{
	walk(fop_col_add, F_COL_ADD);
}

Test(functional_faults, sync)
{
	walk(fop_sync, F_NONE);
}

Test(functional_faults, view)
{
	walk(fop_view, F_NONE);
}

Test(functional_faults, reduction_of_a_stale_view)
{
	walk(fop_sum, F_NONE);
}

Test(functional_faults, lazy_clone)
{
	walk(fop_lazy_clone, F_NONE);
}

Test(functional_faults, set_element)
{
	walk(fop_set, F_COL_SET);
}

/* Flushes that cannot allocate: the write that overflowed the queue has
 * happened, so its update stays queued; the next write must apply the queue
 * first or be refused. So the queue never holds more than one update past
 * its count bound, nor more than one value past its byte bound, and every
 * write either happened or changed nothing. Writes through one-element
 * slices reach the count bound, writes through 30-element slices (240 of
 * the base's 320 bytes) the byte bound. */
Test(functional_faults, queue_bound_holds_when_flushes_fail)
{
	enum { N = 40, WIDE = 30, NWIDE = 10, WRITES = 600 };
	static const cow_backend_t *(*const backends[])(void) = {
	    cow_backend_strided, cow_backend_opaque_test};

	for (size_t b = 0; b < 2; b++) {
		cow_tensor_t *p, *x, *one[N], *wide[NWIDE];
		double want[N] = {0};
		int over_bytes = 0, refused = 0;

		p = tt_arange(COW_DTYPE_INT64, 1, (int64_t[]){N}, fa);
		TT_OK(cow_tensor_fill_(p, 0));
		TT_OK(cow_functional_wrap(p, backends[b](), &x));
		cow_tensor_release(p);
		for (int i = 0; i < N; i++)
			TT_OK(cow_tensor_slice(x, 0, i, i + 1, 1, &one[i]));
		for (int j = 0; j < NWIDE; j++)
			TT_OK(cow_tensor_narrow(x, 0, j, WIDE, &wide[j]));
		TT_OK(cow_allocator_fault_fail_random(fa, 0.3, 42 + b));
		for (int w = 0; w < WRITES; w++) {
			bool big = w % 3 == 0;
			int i = big ? (w / 3) % NWIDE : (w * 7) % N;
			cow_status_t st = cow_tensor_fill_(big ? wide[i] : one[i],
			    w + 1);
			cow_functional_info_t in = info(x);

			if (st == COW_OK) {
				for (int k = i; k < i + (big ? WIDE : 1); k++)
					want[k] = w + 1;
			} else {
				cr_assert_eq(st, COW_ENOMEM, "%s",
				    cow_status_str(st));
				refused++;
			}
			over_bytes += in.pending_bytes > in.base_bytes;
			cr_assert_leq(in.pending_updates,
			    COW_FUNCTIONAL_MAX_UPDATES + 1);
			cr_assert_leq(in.pending_bytes,
			    in.base_bytes + WIDE * sizeof(int64_t),
			    "write %d: %zu pending bytes, base %zu", w,
			    in.pending_bytes, in.base_bytes);
		}
		TT_OK(cow_allocator_fault_disarm(fa));
		/* The walk reached failed flushes and refused writes. */
		cr_assert_gt(over_bytes, 0, "no flush failed over the bytes");
		cr_assert_gt(refused, 0, "no write was refused");
		tt_assert_values(x, want);
		for (int i = 0; i < N; i++)
			cow_tensor_release(one[i]);
		for (int j = 0; j < NWIDE; j++)
			cow_tensor_release(wide[j]);
		cow_tensor_release(x);
	}
}

/*
 * A write through a tensor over a user's storage must also reach the
 * storage, which may have to be materialised first (on the strided
 * backend the group's base shares the storage's bytes): every allocation
 * of the first write, and of a write through a stale view after it, may
 * fail, and a failure changes neither a value nor a byte of the storage.
 */
static void
storage_walk(bool second)
{
	static const cow_backend_t *(*const backends[])(void) = {
	    cow_backend_strided, cow_backend_opaque_test};

	for (size_t b = 0; b < 2; b++) {
		const cow_backend_t *prev;
		bool mode;
		int failures = 0;

		TT_OK(cow_backend_set_thread(backends[b](), &prev));
		TT_OK(cow_functional_mode_set_thread(true, &mode));
		for (uint64_t k = 1;; k++) {
			double want[8] = {0, 1, 2, 3, 4, 5, 6, 7};
			cow_tensor_t *t, *row, *col;
			cow_storage_t *s;
			cow_status_t st;
			double *p;

			TT_OK(cow_storage_new(sizeof want, fa, &s));
			TT_OK(cow_storage_mutable_data(s, (void **)&p));
			memcpy(p, want, sizeof want);
			TT_OK(cow_tensor_from_storage(s, COW_DTYPE_FLOAT64, 2,
			    (int64_t[]){2, 4}, NULL, 0, &t));
			TT_OK(cow_tensor_select(t, 0, 1, &row));
			TT_OK(cow_tensor_select(t, 1, 2, &col));
			if (second) {
				TT_OK(cow_tensor_fill_(row, -1));
				for (int i = 4; i < 8; i++)
					want[i] = -1;
			}
			TT_OK(cow_allocator_fault_fail_nth(fa, k));
			st = second ? cow_tensor_add_scalar_(col, 100) :
			    cow_tensor_fill_(row, -1);
			TT_OK(cow_allocator_fault_disarm(fa));
			if (st == COW_OK) {
				if (second) {
					want[2] += 100;
					want[6] += 100;
				} else {
					for (int i = 4; i < 8; i++)
						want[i] = -1;
				}
			} else {
				cr_assert_eq(st, COW_ENOMEM, "%s: allocation "
				    "%llu: %s", cow_backend_name(backends[b]()),
				    (unsigned long long)k, cow_status_str(st));
				cr_assert_str_not_empty(cow_last_error());
				failures++;
			}
			for (int i = 0; i < 8; i++)
				cr_assert_eq(((const double *)
				    cow_storage_const_data(s))[i], want[i],
				    "%s: allocation %llu: storage[%d]",
				    cow_backend_name(backends[b]()),
				    (unsigned long long)k, i);
			tt_assert_values(t, want);
			cow_tensor_release(col);
			cow_tensor_release(row);
			cow_tensor_release(t);
			cow_storage_release(s);
			if (st == COW_OK)
				break;
		}
		cr_assert_gt(failures, 0, "no allocation point was walked");
		TT_OK(cow_backend_set_thread(prev, NULL));
		TT_OK(cow_functional_mode_set_thread(mode, NULL));
	}
}

Test(functional_faults, first_write_through_a_storage_tensor)
{
	storage_walk(false);
}

Test(functional_faults, write_through_a_stale_storage_view)
{
	storage_walk(true);
}
