/*
 * Functionalization: every view kind written through and read back through
 * other aliases, views of views and of stale parents, ordered and
 * overlapping updates, the in-place transpose; every op on views, stale
 * inputs and broadcasts (the three ways of functional_test.h).
 */
#include "functional_test.h"

TestSuite(functional, .timeout = 60.0);

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
