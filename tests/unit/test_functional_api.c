/*
 * Functionalization at its boundaries: wrap, to_plain, mixing plain and
 * functional operands, refused access, backends and modes.
 */
#include <cowstore/testing.h>

#include "functional_test.h"

TestSuite(functional, .timeout = 60.0);

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
/* The documented limits (functional.h): the reshape-alias simulation does */
/* not check functional tensors; the opaque backend materialises views.    */

static int fn_warnings;

static void
fn_count_warning(const cow_shadow_event_t *e, void *ctx)
{
	(void)e;
	(void)ctx;
	fn_warnings++;
}

/* A read that relies on reshape aliasing: the strided runtime refuses it
 * under COW_SHADOW_ERROR; a functional program sees the aliased value. */
static cow_status_t
read_through_warn_reshape(bool functional, double *x)
{
	cow_tensor_t *t, *r;
	cow_status_t st;

	TT_OK(cow_functional_mode_set_thread(functional, NULL));
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_WARN, NULL));
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 1, (int64_t[]){4}, 1, NULL,
	    &t));
	TT_OK(cow_tensor_reshape(t, 2, (int64_t[]){2, 2}, &r));
	TT_OK(cow_tensor_fill_(r, 7));
	st = cow_tensor_get_f64(t, (int64_t[]){0}, x);
	cow_tensor_release(r);
	cow_tensor_release(t);
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
	TT_OK(cow_functional_mode_set_thread(false, NULL));
	return st;
}

Test(functional, reshape_alias_simulation_does_not_check_functional_tensors)
{
	double x = -1;

	cow_shadow_handler_set(fn_count_warning, NULL);
	cow_shadow_policy_set(COW_SHADOW_ERROR);
	cr_assert_eq(read_through_warn_reshape(false, &x), COW_EALIASING);
	fn_warnings = 0;
	x = -1;
	cr_assert_eq(read_through_warn_reshape(true, &x), COW_OK);
	cr_assert_eq(x, 7.0);
	cow_shadow_policy_set(COW_SHADOW_WARN_ALWAYS);
	fn_warnings = 0;
	cr_assert_eq(read_through_warn_reshape(false, &x), COW_OK);
	cr_assert_gt(fn_warnings, 0);
	fn_warnings = 0;
	cr_assert_eq(read_through_warn_reshape(true, &x), COW_OK);
	cr_assert_eq(fn_warnings, 0);
	cow_shadow_handler_set(NULL, NULL);
}

/* A view the strided runtime makes without copying is a buffer of its own
 * on the opaque backend: expanding a scalar to 2^40 elements is refused. */
Test(functional, opaque_backend_allocates_a_view_whole)
{
	cow_tensor_t *sc, *e = NULL;

	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 0, NULL, 1, NULL, &sc));
	TT_OK(cow_tensor_expand(sc, 1, (int64_t[]){(int64_t)1 << 40}, &e));
	cow_tensor_release(e);
	cow_tensor_release(sc);
	TT_OK(cow_backend_set_thread(cow_backend_opaque_test(), NULL));
	TT_OK(cow_tensor_full(COW_DTYPE_FLOAT32, 0, NULL, 1, NULL, &sc));
	e = NULL;
	cr_assert_eq(cow_tensor_expand(sc, 1,
	    (int64_t[]){(int64_t)1 << 40}, &e), COW_ENOMEM);
	cr_assert_null(e);
	cow_tensor_release(sc);
	TT_OK(cow_backend_set_thread(NULL, NULL));
}
