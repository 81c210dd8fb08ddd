/*
 * Bad input to the tensor API: a status, a message naming the offending
 * value, out-parameters untouched, nothing leaked. Then an allocation-
 * failure walk: every allocation point of the tensor operations fails in
 * turn, each failure returns COW_ENOMEM and changes nothing.
 */
#include <criterion/criterion.h>

#include <cowstore/testing.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "tensor_test.h"

#define SENTINEL ((cow_tensor_t *)(uintptr_t)0x5eed)

TestSuite(tensor_errors, .init = leak_setup, .fini = leak_teardown,
    .timeout = 30.0);

/* Expect @call to fail with @status, a message containing @needle, out
 * still SENTINEL and no byte more allocated. */
#define REFUSED(call, status, needle)                                       \
	do {                                                                \
		uint64_t live_ = cow_test_alloc_stats(sys).live_bytes;      \
		out = SENTINEL;                                             \
		TT_FAILS(call, status, needle);                             \
		cr_assert_eq(out, SENTINEL, "%s wrote its out-parameter",   \
		    #call);                                                 \
		cr_assert_eq(cow_test_alloc_stats(sys).live_bytes, live_,   \
		    "%s leaked", #call);                                    \
	} while (0)

Test(tensor_errors, dims_out_of_range)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 2, sz, sys), *out, *s;
	int64_t v;

	REFUSED(cow_tensor_size(t, 2, &v), COW_ERANGE,
	    "dim 2 out of range [-2, 2)");
	REFUSED(cow_tensor_stride(t, -3, &v), COW_ERANGE, "dim -3");
	REFUSED(cow_tensor_select(t, 2, 0, &out), COW_ERANGE, "dim 2");
	REFUSED(cow_tensor_select(t, 0, 3, &out), COW_ERANGE,
	    "index 3 out of range for dim 0 of size 3");
	REFUSED(cow_tensor_select(t, 1, -5, &out), COW_ERANGE, "index -5");
	REFUSED(cow_tensor_slice(t, -3, 0, 1, 1, &out), COW_ERANGE, "dim -3");
	REFUSED(cow_tensor_slice(t, 0, 0, 1, 0, &out), COW_EINVAL,
	    "step 0 must be positive");
	REFUSED(cow_tensor_narrow(t, 1, 2, 3, &out), COW_ERANGE,
	    "length 3 out of range [0, 2]");
	REFUSED(cow_tensor_narrow(t, 1, 5, 0, &out), COW_ERANGE, "start 5");
	REFUSED(cow_tensor_narrow(t, 1, 0, -1, &out), COW_ERANGE,
	    "length -1");
	REFUSED(cow_tensor_transpose(t, 0, 7, &out), COW_ERANGE, "dim 7");
	REFUSED(cow_tensor_permute(t, 2, (int[]){0, 0}, &out), COW_EINVAL,
	    "dim 0 appears twice");
	REFUSED(cow_tensor_permute(t, 2, (int[]){0, 2}, &out), COW_ERANGE,
	    "dim 2");
	REFUSED(cow_tensor_permute(t, 3, (int[]){0, 1, 2}, &out), COW_ESHAPE,
	    "3 dims given");
	REFUSED(cow_tensor_unsqueeze(t, 3, &out), COW_ERANGE,
	    "dim 3 out of range [-3, 3)");
	REFUSED(cow_tensor_squeeze(t, -9, &out), COW_ERANGE, "dim -9");
	REFUSED(cow_tensor_diagonal(t, 0, 1, -1, &out), COW_EINVAL,
	    "same dimension");
	REFUSED(cow_tensor_diagonal(t, 0, 0, 2, &out), COW_ERANGE, "dim 2");
	REFUSED(cow_tensor_sum_dim(t, 2, false, &out), COW_ERANGE, "dim 2");
	REFUSED(cow_tensor_get_i64(t, (int64_t[]){1, 4}, &v), COW_ERANGE,
	    "index 4 out of range for dim 1 of size 4");
	REFUSED(cow_tensor_set_f64(t, (int64_t[]){-4, 0}, 1), COW_ERANGE,
	    "index -4");
	REFUSED(cow_tensor_get_i64(t, NULL, &v), COW_EINVAL,
	    "index is NULL");
	TT_OK(cow_tensor_sum(t, &s));
	REFUSED(cow_tensor_select(s, 0, 0, &out), COW_ERANGE,
	    "the tensor has no dimensions");
	REFUSED(cow_tensor_size(s, -1, &v), COW_ERANGE, "dim -1");
	cow_tensor_release(s);
	cow_tensor_release(t);
}

Test(tensor_errors, negative_and_overflowing_sizes)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 1, (int64_t[]){12}, sys);
	cow_tensor_t *out, *one;
	const int64_t huge = (int64_t)1 << 40;

	REFUSED(cow_tensor_empty(COW_DTYPE_INT32, 2, (int64_t[]){3, -2}, sys,
	    &out), COW_EINVAL, "size -2 at dim 1 is negative");
	REFUSED(cow_tensor_zeros(COW_DTYPE_INT32, 2, (int64_t[]){huge, huge},
	    sys, &out), COW_EOVERFLOW, "overflows");
	REFUSED(cow_tensor_full(COW_DTYPE_INT64, 2,
	    (int64_t[]){(int64_t)1 << 60, 4}, 0, sys, &out), COW_EOVERFLOW,
	    "exceeds the maximum");
	REFUSED(cow_tensor_arange(COW_DTYPE_INT32, -1, sys, &out),
	    COW_EINVAL, "n -1 is negative");
	REFUSED(cow_tensor_empty(COW_DTYPE_INT32, COW_TENSOR_MAX_NDIM + 1,
	    (int64_t[COW_TENSOR_MAX_NDIM + 1]){0}, sys, &out), COW_ERANGE,
	    "ndim 17 out of range [0, 16]");
	REFUSED(cow_tensor_empty(COW_DTYPE_INT32, -1, NULL, sys, &out),
	    COW_ERANGE, "ndim -1");
	REFUSED(cow_tensor_empty(COW_DTYPE_INT32, 2, NULL, sys, &out),
	    COW_EINVAL, "sizes is NULL");
	REFUSED(cow_tensor_view(t, 2, (int64_t[]){-2, 6}, &out), COW_EINVAL,
	    "size -2 at dim 0");
	REFUSED(cow_tensor_view(t, 2, (int64_t[]){huge, huge}, &out),
	    COW_EOVERFLOW, "overflows");
	TT_OK(cow_tensor_narrow(t, 0, 0, 1, &one));
	REFUSED(cow_tensor_expand(one, 2, (int64_t[]){-5, 1}, &out),
	    COW_EINVAL, "size -5 at dim 0");
	REFUSED(cow_tensor_expand(one, 1, (int64_t[]){-2}, &out), COW_EINVAL,
	    "size -2");
	REFUSED(cow_tensor_expand(one, 2, (int64_t[]){-1, 3}, &out),
	    COW_EINVAL, "only allowed for existing dims");
	REFUSED(cow_tensor_expand(one, 3, (int64_t[]){huge, huge, 1}, &out),
	    COW_EOVERFLOW, "overflows");
	cow_tensor_release(one);
	REFUSED(cow_tensor_as_strided(t, 1, (int64_t[]){-1}, (int64_t[]){1},
	    0, &out), COW_EINVAL, "size -1");
	REFUSED(cow_tensor_as_strided(t, 1, (int64_t[]){2}, (int64_t[]){-1},
	    4, &out), COW_EINVAL, "stride -1 at dim 0 is negative");
	REFUSED(cow_tensor_as_strided(t, 1, (int64_t[]){2}, (int64_t[]){1},
	    -3, &out), COW_EINVAL, "storage offset -3 is negative");
	REFUSED(cow_tensor_as_strided(t, 1, (int64_t[]){2},
	    (int64_t[]){INT64_MAX}, 0, &out), COW_EOVERFLOW, "overflows");
	cow_tensor_release(t);
}

Test(tensor_errors, incompatible_views_and_bounds)
{
	const int64_t sz[2] = {3, 4};
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT64, 2, sz, sys), *out, *tr;
	cow_storage_t *st = cow_test_storage(40, sys, 1);

	REFUSED(cow_tensor_view(t, 1, (int64_t[]){5}, &out), COW_ESHAPE,
	    "shape [5] is invalid for 12 elements");
	REFUSED(cow_tensor_view(t, 2, (int64_t[]){-1, 5}, &out), COW_ESHAPE,
	    "[-1, 5]");
	REFUSED(cow_tensor_view(t, 3, (int64_t[]){-1, 2, -1}, &out),
	    COW_EINVAL, "only one dimension can be -1");
	TT_OK(cow_tensor_transpose(t, 0, 1, &tr));
	REFUSED(cow_tensor_view(tr, 1, (int64_t[]){12}, &out), COW_ESHAPE,
	    "strides [1, 4]");
	REFUSED(cow_tensor_expand(tr, 2, (int64_t[]){4, 6}, &out),
	    COW_ESHAPE, "dim 1 has size 3, not 1");
	REFUSED(cow_tensor_expand(tr, 1, (int64_t[]){12}, &out), COW_ERANGE,
	    "ndim 1 out of range [2, 16]");
	cow_tensor_release(tr);
	/* 12 int64 elements: 96 bytes. */
	REFUSED(cow_tensor_as_strided(t, 1, (int64_t[]){3}, (int64_t[]){4},
	    5, &out), COW_ERANGE, "need 112 bytes but the storage has 96");
	REFUSED(cow_tensor_as_strided(t, 0, NULL, NULL, 12, &out),
	    COW_ERANGE, "need 104 bytes");
	REFUSED(cow_tensor_as_strided(t, 2, (int64_t[]){0, 2},
	    (int64_t[]){1, 1}, 13, &out), COW_ERANGE, "offset 13");
	TT_OK(cow_tensor_as_strided(t, 2, (int64_t[]){0, 2},
	    (int64_t[]){1, 1}, 12, &out));
	cow_tensor_release(out);
	TT_OK(cow_tensor_as_strided(t, 1, (int64_t[]){3}, (int64_t[]){4}, 3,
	    &out));
	tt_assert_values(out, (double[]){3, 7, 11});
	cow_tensor_release(out);
	/* from_storage is checked the same way: 40 bytes hold 10 int32. */
	REFUSED(cow_tensor_from_storage(st, COW_DTYPE_INT32, 2,
	    (int64_t[]){3, 3}, NULL, 2, &out), COW_ERANGE,
	    "need 44 bytes but the storage has 40");
	REFUSED(cow_tensor_from_storage(st, COW_DTYPE_INT32, 1,
	    (int64_t[]){2}, (int64_t[]){-3}, 9, &out), COW_EINVAL,
	    "stride -3");
	REFUSED(cow_tensor_from_storage(st, COW_DTYPE_INT32, 1,
	    (int64_t[]){2}, NULL, -1, &out), COW_EINVAL, "offset -1");
	REFUSED(cow_tensor_from_storage(NULL, COW_DTYPE_INT32, 0, NULL, NULL,
	    0, &out), COW_EINVAL, "'storage'");
	TT_OK(cow_tensor_from_storage(st, COW_DTYPE_INT32, 2,
	    (int64_t[]){3, 3}, NULL, 1, &out));
	cow_tensor_release(out);
	cow_storage_release(st);
	cow_tensor_release(t);
}

Test(tensor_errors, dtype_mismatch_and_unknown)
{
	cow_tensor_t *a, *b, *out;
	bool eq;

	REFUSED(cow_tensor_empty((cow_dtype_t)15, 0, NULL, sys, &out),
	    COW_EINVAL, "unknown dtype 15");
	REFUSED(cow_tensor_arange((cow_dtype_t)-1, 3, sys, &out), COW_EINVAL,
	    "unknown dtype -1");
	TT_OK(cow_tensor_zeros(COW_DTYPE_INT32, 1, (int64_t[]){3}, sys, &a));
	TT_OK(cow_tensor_zeros(COW_DTYPE_INT64, 1, (int64_t[]){3}, sys, &b));
	REFUSED(cow_tensor_add(a, b, &out), COW_EDTYPE,
	    "dtypes int32 and int64 differ");
	REFUSED(cow_tensor_mul(b, a, &out), COW_EDTYPE,
	    "dtypes int64 and int32 differ");
	REFUSED(cow_tensor_add_(a, b), COW_EDTYPE, "int64");
	REFUSED(cow_tensor_mul_(b, a), COW_EDTYPE, "int32");
	REFUSED(cow_tensor_equal(a, b, &eq), COW_EDTYPE, "int32 and int64");
	/* copy_ converts instead. */
	TT_OK(cow_tensor_copy_(a, b));
	cow_tensor_release(b);
	TT_OK(cow_tensor_zeros(COW_DTYPE_BOOL, 1, (int64_t[]){3}, sys, &b));
	REFUSED(cow_tensor_neg(b, &out), COW_EDTYPE, "bool");
	cow_tensor_release(b);
	cow_tensor_release(a);
}

/* Each binary op names itself in the message of a failure found below its
 * argument checks (shapes that do not broadcast): the name is added where
 * the public call returns (core/error.h), once. */
Test(tensor_errors, binary_ops_name_themselves)
{
	static const struct {
		const char *name;
		cow_status_t (*fn)(const cow_tensor_t *, const cow_tensor_t *,
		    cow_tensor_t **);
	} out_ops[] = {
		{"cow_tensor_add", cow_tensor_add},
		{"cow_tensor_mul", cow_tensor_mul},
		{"cow_tensor_sub", cow_tensor_sub},
		{"cow_tensor_div", cow_tensor_div},
		{"cow_tensor_floor_div", cow_tensor_floor_div},
		{"cow_tensor_mod", cow_tensor_mod},
		{"cow_tensor_eq", cow_tensor_eq},
		{"cow_tensor_ne", cow_tensor_ne},
		{"cow_tensor_lt", cow_tensor_lt},
		{"cow_tensor_le", cow_tensor_le},
		{"cow_tensor_gt", cow_tensor_gt},
		{"cow_tensor_ge", cow_tensor_ge},
		{"cow_tensor_matmul", cow_tensor_matmul},
	};
	static const struct {
		const char *name;
		cow_status_t (*fn)(cow_tensor_t *, const cow_tensor_t *);
	} in_ops[] = {
		{"cow_tensor_add_", cow_tensor_add_},
		{"cow_tensor_mul_", cow_tensor_mul_},
		{"cow_tensor_sub_", cow_tensor_sub_},
		{"cow_tensor_div_", cow_tensor_div_},
		{"cow_tensor_floor_div_", cow_tensor_floor_div_},
		{"cow_tensor_mod_", cow_tensor_mod_},
		{"cow_tensor_copy_", cow_tensor_copy_},
	};
	cow_tensor_t *a, *b, *out;
	char want[64];

	a = tt_arange(COW_DTYPE_FLOAT32, 2, (int64_t[]){2, 3}, sys);
	b = tt_arange(COW_DTYPE_FLOAT32, 2, (int64_t[]){4, 5}, sys);
	for (size_t i = 0; i < sizeof out_ops / sizeof out_ops[0]; i++) {
		snprintf(want, sizeof want, "%s: ", out_ops[i].name);
		REFUSED(out_ops[i].fn(a, b, &out), COW_ESHAPE, want);
		cr_assert(strncmp(cow_last_error(), want, strlen(want)) == 0 &&
		    strstr(cow_last_error() + 1, want) == NULL,
		    "%s: '%s' is not named once", out_ops[i].name,
		    cow_last_error());
	}
	for (size_t i = 0; i < sizeof in_ops / sizeof in_ops[0]; i++) {
		snprintf(want, sizeof want, "%s: ", in_ops[i].name);
		TT_FAILS(in_ops[i].fn(a, b), COW_ESHAPE, want);
		cr_assert(strncmp(cow_last_error(), want, strlen(want)) == 0 &&
		    strstr(cow_last_error() + 1, want) == NULL,
		    "%s: '%s' is not named once", in_ops[i].name,
		    cow_last_error());
	}
	cow_tensor_release(a);
	cow_tensor_release(b);
}

Test(tensor_errors, null_arguments)
{
	cow_tensor_t *t = tt_arange(COW_DTYPE_INT32, 1, (int64_t[]){3}, sys);
	cow_tensor_t *out;
	int64_t v;
	void *p;
	bool eq;

	REFUSED(cow_tensor_empty(COW_DTYPE_INT32, 0, NULL, sys, NULL),
	    COW_EINVAL, "'out'");
	REFUSED(cow_tensor_view(NULL, 0, NULL, &out), COW_EINVAL, "'t'");
	REFUSED(cow_tensor_view(t, 1, (int64_t[]){3}, NULL), COW_EINVAL,
	    "'out'");
	REFUSED(cow_tensor_from_data(COW_DTYPE_INT32, 1, (int64_t[]){3}, NULL,
	    sys, &out), COW_EINVAL, "data is NULL but the shape has 3");
	REFUSED(cow_tensor_add(NULL, t, &out), COW_EINVAL, "'a'");
	REFUSED(cow_tensor_add(t, NULL, &out), COW_EINVAL, "'b'");
	REFUSED(cow_tensor_add(t, t, NULL), COW_EINVAL, "'out'");
	REFUSED(cow_tensor_add_(t, NULL), COW_EINVAL, "'other'");
	REFUSED(cow_tensor_copy_(NULL, t), COW_EINVAL, "'dst'");
	REFUSED(cow_tensor_fill_(NULL, 1), COW_EINVAL, "'t'");
	REFUSED(cow_tensor_equal(t, t, NULL), COW_EINVAL, "'out'");
	REFUSED(cow_tensor_sum(NULL, &out), COW_EINVAL, "'a'");
	REFUSED(cow_tensor_clone(NULL, &out), COW_EINVAL, "'t'");
	REFUSED(cow_tensor_lazy_clone(t, NULL), COW_EINVAL, "'out'");
	REFUSED(cow_tensor_reshape(NULL, 0, NULL, &out), COW_EINVAL, "'t'");
	REFUSED(cow_tensor_mutable_data(t, NULL), COW_EINVAL, "'out'");
	REFUSED(cow_tensor_size(NULL, 0, &v), COW_EINVAL, "'t'");
	REFUSED(cow_tensor_get_i64(t, (int64_t[]){0}, NULL), COW_EINVAL,
	    "'out'");
	REFUSED(cow_tensor_permute(t, 1, NULL, &out), COW_EINVAL, "'dims'");
	(void)eq;
	(void)p;
	cr_assert_eq(cow_tensor_ndim(NULL), 0);
	cr_assert_eq(cow_tensor_numel(NULL), 0);
	cr_assert_null(cow_tensor_sizes(NULL));
	cr_assert_null(cow_tensor_storage(NULL));
	cr_assert_null(cow_tensor_const_data(NULL));
	cr_assert_not(cow_tensor_is_contiguous(NULL));
	cow_tensor_retain(NULL);  /* does nothing, as release(NULL) */
	cow_tensor_release(NULL);
	cow_tensor_release(t);
}

/* ------------------------------------------------------------------ */
/* Allocation failure walk.                                             */

static cow_allocator_t *fa;

struct fw {
	cow_tensor_t *a, *b;
};

typedef cow_status_t (*fw_op)(struct fw *f, cow_tensor_t **out);

/*
 * Fail the k-th allocation of @op for k = 1, 2, ... until it succeeds.
 * Each failure: COW_ENOMEM, a message, *out untouched, no byte leaked,
 * and @a and @b exactly as before (values, storage, COW state, address).
 */
static void
walk(const char *name, fw_op op, struct fw *f)
{
	cow_tensor_t *ref_a, *ref_b, *out = NULL;
	const void *addr_a = cow_tensor_const_data(f->a);
	bool cow_a = cow_storage_is_cow(cow_tensor_storage(f->a));
	size_t shares_a = cow_storage_share_count(cow_tensor_storage(f->a));
	int failures = 0;
	uint64_t k;

	TT_OK(cow_tensor_clone(f->a, &ref_a));
	TT_OK(cow_tensor_clone(f->b, &ref_b));
	for (k = 1; k < 64; k++) {
		uint64_t live = cow_test_alloc_stats(fa).live_bytes;
		uint64_t injected = cow_allocator_fault_injected(fa);
		cow_status_t st;
		bool eq;

		out = SENTINEL;
		TT_OK(cow_allocator_fault_fail_nth(fa, k));
		st = op(f, &out);
		TT_OK(cow_allocator_fault_disarm(fa));
		if (st == COW_OK) {
			cr_assert_eq(cow_allocator_fault_injected(fa),
			    injected, "%s: an injected failure was swallowed",
			    name);
			break;
		}
		failures++;
		cr_assert_eq(st, COW_ENOMEM, "%s, k=%llu: %s", name,
		    (unsigned long long)k, cow_status_str(st));
		cr_assert_str_not_empty(cow_last_error());
		cr_assert_eq(out, SENTINEL, "%s: out written on failure", name);
		cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, live,
		    "%s, k=%llu: leaked", name, (unsigned long long)k);
		cr_assert_eq(cow_tensor_const_data(f->a), addr_a,
		    "%s, k=%llu: a moved", name, (unsigned long long)k);
		cr_assert_eq(cow_storage_is_cow(cow_tensor_storage(f->a)),
		    cow_a, "%s, k=%llu: COW state of a changed", name,
		    (unsigned long long)k);
		cr_assert_eq(cow_storage_share_count(cow_tensor_storage(f->a)),
		    shares_a, "%s: shares of a changed", name);
		TT_OK(cow_tensor_equal(f->a, ref_a, &eq));
		cr_assert(eq, "%s, k=%llu: a changed", name,
		    (unsigned long long)k);
		TT_OK(cow_tensor_equal(f->b, ref_b, &eq));
		cr_assert(eq, "%s, k=%llu: b changed", name,
		    (unsigned long long)k);
	}
	cr_assert_lt(k, 64, "%s never succeeded", name);
	cr_assert_geq(failures, 1, "%s: no allocation point walked", name);
	if (out != SENTINEL && out != NULL)
		cow_tensor_release(out);
	cow_tensor_release(ref_a);
	cow_tensor_release(ref_b);
}

static cow_status_t
op_zeros(struct fw *f, cow_tensor_t **out)
{
	(void)f;
	return cow_tensor_zeros(COW_DTYPE_FLOAT32, 2, (int64_t[]){3, 3}, fa,
	    out);
}

static cow_status_t
op_full(struct fw *f, cow_tensor_t **out)
{
	(void)f;
	return cow_tensor_full(COW_DTYPE_INT32, 1, (int64_t[]){5}, 2, fa, out);
}

static cow_status_t
op_add(struct fw *f, cow_tensor_t **out)
{
	return cow_tensor_add(f->a, f->b, out);
}

static cow_status_t
op_sum_dim(struct fw *f, cow_tensor_t **out)
{
	return cow_tensor_sum_dim(f->a, 0, true, out);
}

static cow_status_t
op_lazy_clone(struct fw *f, cow_tensor_t **out)
{
	return cow_tensor_lazy_clone(f->a, out);
}

static cow_status_t
op_clone(struct fw *f, cow_tensor_t **out)
{
	return cow_tensor_clone(f->b, out);
}

static cow_status_t
op_select(struct fw *f, cow_tensor_t **out)
{
	return cow_tensor_select(f->a, 1, 1, out);
}

static cow_status_t
op_reshape_lazy(struct fw *f, cow_tensor_t **out)
{
	cow_status_t st;

	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_LAZY_COPY, NULL));
	st = cow_tensor_reshape(f->a, 1, (int64_t[]){-1}, out);
	TT_OK(cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL));
	return st;
}

static cow_status_t
op_reshape_copy(struct fw *f, cow_tensor_t **out)
{
	return cow_tensor_reshape(f->b, 1, (int64_t[]){-1}, out);
}

static cow_status_t
op_expect_contiguous(struct fw *f, cow_tensor_t **out)
{
	cow_maybe_owned_t mo;
	cow_status_t st = cow_tensor_expect_contiguous(f->b, &mo);

	if (st == COW_OK) {
		cr_assert(cow_maybe_owned_is_owned(&mo));
		cow_tensor_retain(cow_maybe_owned_get(&mo));
		*out = cow_maybe_owned_get(&mo);
		cow_maybe_owned_release(&mo);
	}
	return st;
}

/* b += a, where a is a COW lazy clone and b its transpose (same
 * storage): the op reads a temporary copy of a (an allocation) and
 * materialises the storage (another). */
static cow_status_t
op_inplace_cow(struct fw *f, cow_tensor_t **out)
{
	(void)out;
	return cow_tensor_add_(f->b, f->a);
}

Test(tensor_errors, allocation_failures_change_nothing)
{
	struct fw f;
	cow_tensor_t *base;

	TT_OK(cow_allocator_fault_new(sys, &fa));
	TT_OK(cow_tensor_arange(COW_DTYPE_FLOAT64, 9, fa, &base));
	TT_OK(cow_tensor_view(base, 2, (int64_t[]){3, 3}, &f.a));
	cow_tensor_release(base);
	TT_OK(cow_tensor_transpose(f.a, 0, 1, &f.b));

	walk("zeros", op_zeros, &f);
	walk("full", op_full, &f);
	walk("add", op_add, &f);
	walk("sum_dim", op_sum_dim, &f);
	walk("clone", op_clone, &f);
	walk("select", op_select, &f);
	walk("reshape (copy)", op_reshape_copy, &f);
	walk("expect_contiguous", op_expect_contiguous, &f);
	walk("lazy_clone (fresh source)", op_lazy_clone, &f);
	walk("reshape (lazy copy)", op_reshape_lazy, &f);

	/* b becomes a COW lazy clone of a; writing it in place must fail
	 * cleanly at each allocation. */
	cow_tensor_release(f.b);
	TT_OK(cow_tensor_lazy_clone(f.a, &f.b));
	{
		struct fw g = {f.b, NULL};

		TT_OK(cow_tensor_transpose(f.b, 0, 1, &g.b));
		walk("in-place add on a COW tensor", op_inplace_cow, &g);
		cow_tensor_release(g.b);
	}
	cr_assert_not(cow_storage_is_cow(cow_tensor_storage(f.b)));
	for (int64_t i = 0; i < 3; i++)
		for (int64_t j = 0; j < 3; j++)
			cr_assert_eq(tt_get(f.b, (int64_t[]){i, j}),
			    (double)(3 * j + i) + (double)(3 * i + j));
	cow_tensor_release(f.a);
	cow_tensor_release(f.b);
	cr_assert_eq(cow_test_alloc_stats(fa).live_bytes, 0);
	TT_OK(cow_allocator_destroy(fa));
}
