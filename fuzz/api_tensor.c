/*
 * api_tensor.c - fuzz_api for the tensor API: every function of tensor.h,
 * ops.h and maybe_owned.h with random arguments: NULL tensors, sizes,
 * strides, indices and out-parameters; unknown dtypes and reshape modes;
 * ndim outside [0, COW_TENSOR_MAX_NDIM]; negative and huge sizes, strides,
 * offsets, dims and indices; layouts over a small storage.
 *
 * The rule checked (common.h, tensor.h): each call returns one of the
 * statuses its header lists; on failure the out-parameter is untouched and
 * cow_last_error() names the function; accessors of NULL give 0, false or
 * NULL; no crash, leak or sanitizer report. Every tensor made is read in
 * full through its public layout, so a layout that the bounds checks let
 * through but that reaches outside its storage is an ASan report.
 * fuzz_tensor checks the values; this target checks the contract edges.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/maybe_owned.h>
#include <cowstore/ops.h>
#include <cowstore/tensor.h>
#include <cowstore/testing.h>

#include "api_tensor.h"

#define ARGS (COW_TENSOR_MAX_NDIM + 2)
#define S(st) (1u << -(st))
#define S_OK S(COW_OK)
/* The errors every creation and view may return. */
#define S_MAKE (S(COW_EINVAL) | S(COW_ERANGE) | S(COW_EOVERFLOW) | \
    S(COW_ENOMEM) | S(COW_ESHAPE))
#define S_OP (S(COW_EINVAL) | S(COW_ESHAPE) | S(COW_EDTYPE) | \
    S(COW_EOVERLAP) | S(COW_ENOMEM))

static int sentinel_object;
#define SENTINEL ((cow_tensor_t *)(void *)&sentinel_object)

/* A failed check (fuzz_input.h). */
#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_api: tensor call", (x)->call, (x)->func,            \
	    __VA_ARGS__)

/* @st must be in @allowed; a failure names the function (@name, or
 * s->func) and leaves *out (when given) untouched. Returns st == COW_OK. */
static bool
expect(const struct api_tensor *s, cow_status_t st, unsigned allowed,
    cow_tensor_t *const *out)
{
	if (st > 0 || st < COW_EFORMAT || (S(st) & allowed) == 0)
		fail(s, "returned %d (%s), allowed 0x%x: '%s'", (int)st,
		    cow_status_str(st), allowed, cow_last_error());
	if (st == COW_OK) {
		if (out != NULL && (*out == SENTINEL || *out == NULL))
			fail(s, "succeeded without writing *out");
		return true;
	}
	if (strstr(cow_last_error(), s->func) == NULL)
		fail(s, "failed (%s) without naming the function: '%s'",
		    cow_status_str(st), cow_last_error());
	if (out != NULL && *out != SENTINEL)
		fail(s, "failed (%s) but wrote *out", cow_status_str(st));
	return false;
}

/* cow_tensor_nbytes: 0 without elements, else from element [0, ..., 0]
 * to one past the element furthest from it; and read_data gives what
 * const_data gives. */
static void
check_span(const struct api_tensor *s, const cow_tensor_t *t)
{
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	size_t es = cow_dtype_size(cow_tensor_dtype(t));
	size_t nb = cow_tensor_nbytes(t);
	const void *p = SENTINEL;
	int64_t far = 0;

	/* Only a tensor with elements lies inside its storage; without any,
	 * the other dimensions' sizes and strides may be as large as int64
	 * allows, and their products overflow. */
	for (int d = 0; d < cow_tensor_ndim(t) && cow_tensor_numel(t) > 0; d++)
		far += st[d] * (sz[d] - 1);
	if (cow_tensor_numel(t) == 0 ? nb != 0 : nb != (size_t)(far + 1) * es)
		fail(s, "nbytes %zu for %lld elements (furthest %lld)", nb,
		    (long long)cow_tensor_numel(t), (long long)far);
	if (cow_tensor_read_data(t, &p) != COW_OK ||
	    p != cow_tensor_const_data(t))
		fail(s, "read_data %p (%s), const_data %p", p,
		    cow_last_error(), cow_tensor_const_data(t));
}

/* Read every element through the public layout (ASan checks the memory)
 * and check the accessors agree with each other. */
static void
touch(const struct api_tensor *s, const cow_tensor_t *t)
{
	int nd = cow_tensor_ndim(t);
	const int64_t *sz = cow_tensor_sizes(t), *st = cow_tensor_strides(t);
	const unsigned char *p = cow_tensor_const_data(t);
	size_t es = cow_dtype_size(cow_tensor_dtype(t));
	int64_t n = cow_tensor_numel(t), idx[COW_TENSOR_MAX_NDIM];
	volatile unsigned char sink = 0;

	if (nd < 0 || nd > COW_TENSOR_MAX_NDIM || es == 0 || n < 0)
		fail(s, "ndim %d, dtype size %zu, numel %lld", nd, es,
		    (long long)n);
	if ((p == NULL) != (n == 0))
		fail(s, "const data %p for %lld elements", (const void *)p,
		    (long long)n);
	check_span(s, t);
	if (n > 4096)
		return; /* an expanded view: too many to walk */
	for (int64_t k = 0; k < n; k++) {
		int64_t r = k, e = 0;

		for (int d = nd - 1; d >= 0; d--) {
			idx[d] = r % sz[d];
			r /= sz[d];
			e += idx[d] * st[d];
		}
		for (size_t b = 0; b < es; b++)
			sink ^= p[(size_t)e * es + b];
	}
	(void)sink;
}

/* Pool a new tensor (or drop it when the pool is full). Tensors of more
 * than 256 elements (expanded views of 2^40 elements, say) are dropped at
 * once: an op over them would run for hours (a libFuzzer timeout, found by
 * a long run), and broadcasting two pooled tensors stays below 2^16. */
static void
keep(struct api_tensor *s, cow_tensor_t *t)
{
	touch(s, t);
	if (cow_tensor_numel(t) > 256) {
		cow_tensor_release(t);
		return;
	}
	for (int i = 0; i < API_TENSORS; i++) {
		if (s->pool[i] == NULL) {
			s->pool[i] = t;
			return;
		}
	}
	cow_tensor_release(t);
}

/* A pool tensor, or NULL (every function must refuse or ignore it). */
static cow_tensor_t *
pick_tensor(struct api_tensor *s, struct fuzz_input *in)
{
	unsigned i = fuzz_u8(in) % (API_TENSORS + 1);

	return i < API_TENSORS ? s->pool[i] : NULL;
}

static int64_t
pick_i64(struct fuzz_input *in)
{
	int8_t v = (int8_t)fuzz_u8(in);

	switch (v) {
	case 127:
		return INT64_MAX;
	case -128:
		return INT64_MIN;
	case 126:
		return (int64_t)1 << 62;
	case 125:
		return (int64_t)1 << 40;
	default:
		return v % 7;
	}
}

static int
pick_int(struct fuzz_input *in)
{
	int8_t v = (int8_t)fuzz_u8(in);

	if (v == 127)
		return 1 << 30;
	if (v == -128)
		return -(1 << 30);
	return v % 20;
}


/* Sizes: small, sometimes negative or huge. With @safe (a real allocator
 * will be asked), the element count stays small. */
static void
pick_sizes(struct fuzz_input *in, int64_t *sizes, bool safe)
{
	for (int d = 0; d < ARGS; d++) {
		sizes[d] = pick_i64(in);
		if (safe && (sizes[d] > 4 || sizes[d] < -2))
			sizes[d] = 4;
	}
}

static void
call_create(struct api_tensor *s, struct fuzz_input *in)
{
	uint8_t how = fuzz_u8(in);
	int dtype = pick_int(in) % 17, ndim = pick_int(in);
	int64_t sizes[ARGS], n = pick_i64(in);
	bool null_out = (how & 7) == 0, null_sizes = (how & 0x38) == 0;
	bool big = (how & 0x40) != 0;
	cow_allocator_t *a = big ? s->capped : NULL;
	cow_tensor_t *t = SENTINEL;
	unsigned char data[8 * 4096];
	cow_status_t st;

	pick_sizes(in, sizes, !big);
	if (ndim > 4 && ndim <= COW_TENSOR_MAX_NDIM && !big)
		ndim = 4; /* 4^4 elements at most from a real allocator */
	if (!big && n > 4096)
		n = 4096;
	memset(data, 0, sizeof data);
	switch (how >> 7 ? 4 : how % 5) {
	case 0:
		s->func = "cow_tensor_zeros";
		st = cow_tensor_zeros(dtype, ndim, null_sizes ? NULL : sizes,
		    a, null_out ? NULL : &t);
		break;
	case 1:
		s->func = "cow_tensor_empty";
		st = cow_tensor_empty(dtype, ndim, null_sizes ? NULL : sizes,
		    a, null_out ? NULL : &t);
		break;
	case 2:
		s->func = "cow_tensor_full";
		st = cow_tensor_full(dtype, ndim, null_sizes ? NULL : sizes,
		    (how & 1) ? NAN : -1e300, a, null_out ? NULL : &t);
		break;
	case 3:
		/* Real data only for what fits in data[]. */
		s->func = "cow_tensor_from_data";
		st = cow_tensor_from_data(dtype, ndim,
		    null_sizes ? NULL : sizes, big ? NULL : data, a,
		    null_out ? NULL : &t);
		break;
	default:
		s->func = "cow_tensor_arange";
		st = cow_tensor_arange(dtype, n, a, null_out ? NULL : &t);
		break;
	}
	if (expect(s, st, S_OK | S_MAKE, null_out ? NULL : &t) && !null_out)
		keep(s, t);
	if (st == COW_OK && (dtype < 0 || dtype >= COW_DTYPE_COUNT))
		fail(s, "accepted dtype %d", dtype);
}

static void
call_from_storage(struct api_tensor *s, struct fuzz_input *in)
{
	uint8_t how = fuzz_u8(in);
	int dtype = pick_int(in) % 17, ndim = pick_int(in) % 6;
	int64_t sizes[ARGS], strides[ARGS], off = pick_i64(in);
	cow_tensor_t *t = SENTINEL;
	cow_status_t st;

	pick_sizes(in, sizes, false);
	for (int d = 0; d < ARGS; d++)
		strides[d] = pick_i64(in);
	s->func = "cow_tensor_from_storage";
	st = cow_tensor_from_storage((how & 1) ? s->storage : NULL, dtype,
	    ndim, (how & 2) ? sizes : NULL, (how & 4) ? strides : NULL, off,
	    (how & 8) ? &t : NULL);
	if (expect(s, st, S_OK | S_MAKE, (how & 8) ? &t : NULL) &&
	    (how & 8))
		keep(s, t);
}

static void
call_accessors(struct api_tensor *s, struct fuzz_input *in)
{
	cow_tensor_t *t = pick_tensor(s, in);
	int dim = pick_int(in);
	uint8_t how = fuzz_u8(in);
	int64_t v = -12345, idx[ARGS];
	double f = -12345.0;
	cow_status_t st;

	if (t == NULL && (cow_tensor_ndim(t) != 0 || cow_tensor_numel(t) != 0 ||
	    cow_tensor_offset(t) != 0 || cow_tensor_sizes(t) != NULL ||
	    cow_tensor_strides(t) != NULL || cow_tensor_is_contiguous(t) ||
	    cow_tensor_storage(t) != NULL || cow_tensor_const_data(t) != NULL ||
	    cow_tensor_refcount(t) != 0 || cow_tensor_nbytes(t) != 0 ||
	    cow_tensor_dtype(t) != COW_DTYPE_INVALID))
		fail(s, "an accessor of NULL gave a value");
	if (how & 1) {
		const void *p = SENTINEL;

		s->func = "cow_tensor_read_data";
		st = cow_tensor_read_data(t, (how & 2) ? &p : NULL);
		expect(s, st, t == NULL || !(how & 2) ? S(COW_EINVAL) : S_OK,
		    NULL);
		if (st != COW_OK && p != SENTINEL)
			fail(s, "failed but wrote *out");
	}
	s->func = (how & 1) ? "cow_tensor_size" : "cow_tensor_stride";
	st = ((how & 1) ? cow_tensor_size : cow_tensor_stride)(t, dim,
	    (how & 2) ? &v : NULL);
	expect(s, st, t == NULL || !(how & 2) ? S(COW_EINVAL) :
	    (dim >= -cow_tensor_ndim(t) && dim < cow_tensor_ndim(t)) ? S_OK :
	    S(COW_ERANGE), NULL);
	if (st != COW_OK && v != -12345)
		fail(s, "failed but wrote *out");
	for (int d = 0; d < ARGS; d++)
		idx[d] = pick_i64(in);
	s->func = (how & 4) ? "cow_tensor_get_f64" : "cow_tensor_get_i64";
	if (how & 4)
		st = cow_tensor_get_f64(t, (how & 8) ? idx : NULL,
		    (how & 16) ? &f : NULL);
	else
		st = cow_tensor_get_i64(t, (how & 8) ? idx : NULL,
		    (how & 16) ? &v : NULL);
	expect(s, st, S_OK | S(COW_EINVAL) | S(COW_ERANGE), NULL);
	if (st != COW_OK && (f != -12345.0 || ((how & 4) == 0 && v != -12345 &&
	    (how & 2) == 0)))
		fail(s, "get failed but wrote *out");
	s->func = (how & 32) ? "cow_tensor_set_f64" : "cow_tensor_set_i64";
	if (how & 32)
		st = cow_tensor_set_f64(t, (how & 64) ? idx : NULL, NAN);
	else
		st = cow_tensor_set_i64(t, (how & 64) ? idx : NULL, INT64_MIN);
	expect(s, st, S_OK | S(COW_EINVAL) | S(COW_ERANGE) | S(COW_ENOMEM),
	    NULL);
	if (how & 128) {
		void *p = SENTINEL;

		s->func = "cow_tensor_mutable_data";
		st = cow_tensor_mutable_data(t, (how & 2) ? &p : NULL);
		expect(s, st, t == NULL || !(how & 2) ? S(COW_EINVAL) :
		    S_OK | S(COW_ENOMEM), NULL);
		if (st != COW_OK && p != SENTINEL)
			fail(s, "failed but wrote *out");
		if (st == COW_OK && (how & 2) &&
		    p != cow_tensor_const_data(t))
			fail(s, "mutable %p, const %p", p,
			    cow_tensor_const_data(t));
	}
	s->func = "cow_dtype";
	if (cow_dtype_size((cow_dtype_t)dim) == 0 ?
	    (dim >= 0 && dim < COW_DTYPE_COUNT) :
	    (dim < 0 || dim >= COW_DTYPE_COUNT))
		fail(s, "cow_dtype_size(%d) = %zu", dim,
		    cow_dtype_size((cow_dtype_t)dim));
	if ((strcmp(cow_dtype_name((cow_dtype_t)dim), "unknown") == 0) !=
	    (dim < 0 || dim >= COW_DTYPE_COUNT))
		fail(s, "cow_dtype_name(%d) = %s", dim,
		    cow_dtype_name((cow_dtype_t)dim));
}

static void
call_view(struct api_tensor *s, struct fuzz_input *in)
{
	uint8_t kind = fuzz_u8(in), how = fuzz_u8(in);
	cow_tensor_t *t = pick_tensor(s, in), *r = SENTINEL;
	cow_tensor_t **out = (how & 7) ? &r : NULL;
	int64_t a = pick_i64(in), b = pick_i64(in), c = pick_i64(in);
	int d0 = pick_int(in), d1 = pick_int(in), n = pick_int(in);
	int64_t sizes[ARGS], strides[ARGS];
	int dims[ARGS];
	const int64_t *sz = (how & 8) ? sizes : NULL;
	cow_status_t st;

	pick_sizes(in, sizes, false);
	for (int d = 0; d < ARGS; d++) {
		strides[d] = pick_i64(in);
		dims[d] = pick_int(in) % 5;
	}
	switch (kind % 14) {
	case 0:
		s->func = "cow_tensor_view";
		st = cow_tensor_view(t, n, sz, out);
		break;
	case 1:
		s->func = "cow_tensor_select";
		st = cow_tensor_select(t, d0, a, out);
		break;
	case 2:
		s->func = "cow_tensor_slice";
		st = cow_tensor_slice(t, d0, a, b, c, out);
		break;
	case 3:
		s->func = "cow_tensor_narrow";
		st = cow_tensor_narrow(t, d0, a, b, out);
		break;
	case 4:
		s->func = "cow_tensor_transpose";
		st = cow_tensor_transpose(t, d0, d1, out);
		break;
	case 5:
		s->func = "cow_tensor_permute";
		st = cow_tensor_permute(t, n, (how & 16) ? dims : NULL, out);
		break;
	case 6:
		s->func = "cow_tensor_unsqueeze";
		st = cow_tensor_unsqueeze(t, d0, out);
		break;
	case 7:
		s->func = "cow_tensor_squeeze";
		st = cow_tensor_squeeze(t, d0, out);
		break;
	case 8:
		s->func = "cow_tensor_squeeze_all";
		st = cow_tensor_squeeze_all(t, out);
		break;
	case 9:
		s->func = "cow_tensor_expand";
		st = cow_tensor_expand(t, n, sz, out);
		break;
	case 10:
		s->func = "cow_tensor_diagonal";
		st = cow_tensor_diagonal(t, a, d0, d1, out);
		break;
	case 11:
		s->func = "cow_tensor_as_strided";
		st = cow_tensor_as_strided(t, n, sz,
		    (how & 16) ? strides : NULL, a, out);
		break;
	case 12:
		s->func = "cow_tensor_reshape";
		st = cow_tensor_reshape(t, n, sz, out);
		break;
	default:
		switch (how % 3) {
		case 0:
			s->func = "cow_tensor_clone";
			st = cow_tensor_clone(t, out);
			break;
		case 1:
			s->func = "cow_tensor_contiguous";
			st = cow_tensor_contiguous(t, out);
			break;
		default:
			s->func = "cow_tensor_lazy_clone";
			st = cow_tensor_lazy_clone(t, out);
			break;
		}
		break;
	}
	if (expect(s, st, S_OK | S_MAKE, out)) {
		if (t == NULL || out == NULL)
			fail(s, "succeeded with a NULL argument");
		keep(s, r);
	}
}

static void
call_reshape_mode(struct api_tensor *s, struct fuzz_input *in)
{
	int mode = (int8_t)fuzz_u8(in) % 5;
	uint8_t how = fuzz_u8(in);
	cow_reshape_mode_t prev = (cow_reshape_mode_t)77, before;
	cow_status_t st;
	unsigned want;

	before = cow_reshape_mode_get();
	want = mode == COW_RESHAPE_ALIAS || mode == COW_RESHAPE_LAZY_COPY ||
	    mode == COW_RESHAPE_WARN ? S_OK : S(COW_EINVAL);
	if (how & 1) {
		s->func = "cow_reshape_mode_set_thread";
		if (mode == COW_RESHAPE_INHERIT)
			want = S_OK;
		st = cow_reshape_mode_set_thread((cow_reshape_mode_t)mode,
		    (how & 2) ? &prev : NULL);
		expect(s, st, want, NULL);
		if (st != COW_OK && prev != (cow_reshape_mode_t)77)
			fail(s, "failed but wrote *previous");
		if (st == COW_OK && cow_reshape_mode_get_thread() != mode)
			fail(s, "thread mode %d after setting %d",
			    (int)cow_reshape_mode_get_thread(), mode);
		if (cow_reshape_mode_effective() != (
		    cow_reshape_mode_get_thread() == COW_RESHAPE_INHERIT ?
		    cow_reshape_mode_get() : cow_reshape_mode_get_thread()))
			fail(s, "effective mode disagrees");
		cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL);
		return;
	}
	s->func = "cow_reshape_mode_set";
	st = cow_reshape_mode_set((cow_reshape_mode_t)mode);
	expect(s, st, want, NULL);
	if (cow_reshape_mode_get() != (st == COW_OK ?
	    (cow_reshape_mode_t)mode : before))
		fail(s, "process mode %d", (int)cow_reshape_mode_get());
	cow_reshape_mode_set(COW_RESHAPE_ALIAS);
}

static void
call_op(struct api_tensor *s, struct fuzz_input *in)
{
	uint8_t kind = fuzz_u8(in), how = fuzz_u8(in);
	cow_tensor_t *a = pick_tensor(s, in), *b = pick_tensor(s, in);
	cow_tensor_t *r = SENTINEL, **out = (how & 7) ? &r : NULL;
	int dim = pick_int(in);
	bool eq = false;
	cow_status_t st;

	switch (kind % 13) {
	case 0:
		s->func = "cow_tensor_fill_";
		st = cow_tensor_fill_(a, -0.0);
		break;
	case 1:
		s->func = "cow_tensor_add_scalar_";
		st = cow_tensor_add_scalar_(a, INFINITY);
		break;
	case 2:
		s->func = "cow_tensor_mul_scalar_";
		st = cow_tensor_mul_scalar_(a, NAN);
		break;
	case 3:
		s->func = "cow_tensor_add_";
		st = cow_tensor_add_(a, b);
		break;
	case 4:
		s->func = "cow_tensor_mul_";
		st = cow_tensor_mul_(a, b);
		break;
	case 5:
		s->func = "cow_tensor_copy_";
		st = cow_tensor_copy_(a, b);
		break;
	case 6:
		s->func = "cow_tensor_equal";
		st = cow_tensor_equal(a, b, out != NULL ? &eq : NULL);
		expect(s, st, S_OK | S(COW_EINVAL) | S(COW_EDTYPE), NULL);
		return;
	case 7:
		s->func = "cow_tensor_add";
		st = cow_tensor_add(a, b, out);
		break;
	case 8:
		s->func = "cow_tensor_mul";
		st = cow_tensor_mul(a, b, out);
		break;
	case 9:
		s->func = "cow_tensor_neg";
		st = cow_tensor_neg(a, out);
		break;
	case 10:
		s->func = "cow_tensor_sum";
		st = cow_tensor_sum(a, out);
		break;
	case 11:
		s->func = "cow_tensor_sum_dim";
		st = cow_tensor_sum_dim(a, dim, how & 8, out);
		break;
	default: {
		cow_maybe_owned_t mo, *mop = (how & 7) ? &mo : NULL;

		memset(&mo, 0xa5, sizeof mo);
		s->func = "cow_tensor_expect_contiguous";
		st = cow_tensor_expect_contiguous(a, mop);
		expect(s, st, S_OK | S(COW_EINVAL) | S(COW_ENOMEM), NULL);
		if (st != COW_OK)
			return;
		if (a == NULL || mop == NULL)
			fail(s, "succeeded with a NULL argument");
		if (!cow_tensor_is_contiguous(cow_maybe_owned_get(&mo)) ||
		    cow_maybe_owned_is_owned(&mo) ==
		    (cow_maybe_owned_get(&mo) == a))
			fail(s, "owned %d, same tensor %d",
			    cow_maybe_owned_is_owned(&mo),
			    cow_maybe_owned_get(&mo) == a);
		touch(s, cow_maybe_owned_get(&mo));
		cow_maybe_owned_release(&mo);
		cow_maybe_owned_release(&mo); /* empty: does nothing */
		if (cow_borrow_debug_outstanding(a) != 0 ||
		    cow_borrow_debug_outstanding(NULL) != 0)
			fail(s, "a borrow is still recorded");
		return;
	}
	}
	if (kind % 13 < 6) {
		expect(s, st, S_OK | S_OP, NULL);
		return;
	}
	/* sum_dim over the 0-size dimension of an empty tensor whose other
	 * sizes are huge: the result's element count overflows. */
	if (expect(s, st, S_OK | S_OP | S(COW_ERANGE) |
	    (kind % 13 == 11 ? S(COW_EOVERFLOW) : 0), out)) {
		if (a == NULL || out == NULL)
			fail(s, "succeeded with a NULL argument");
		keep(s, r);
	}
}

static void
call_release(struct api_tensor *s, struct fuzz_input *in)
{
	unsigned i = fuzz_u8(in) % (API_TENSORS + 1);

	s->func = "cow_tensor_release";
	if (i == API_TENSORS) {
		cow_tensor_release(NULL);
		return;
	}
	if (s->pool[i] == NULL)
		return;
	cow_tensor_retain(s->pool[i]);
	if (cow_tensor_refcount(s->pool[i]) < 2)
		fail(s, "refcount %u after a retain",
		    cow_tensor_refcount(s->pool[i]));
	cow_tensor_release(s->pool[i]);
	cow_tensor_release(s->pool[i]);
	s->pool[i] = NULL;
}

void
api_tensor_init(struct api_tensor *s, cow_allocator_t *capped)
{
	memset(s, 0, sizeof *s);
	s->capped = capped;
	if (cow_storage_new(64, NULL, &s->storage) != COW_OK)
		fail(s, "cow_storage_new: %s", cow_last_error());
}

void
api_tensor_call(struct api_tensor *s, struct fuzz_input *in)
{
	switch (fuzz_u8(in) % 7) {
	case 0:
		call_create(s, in);
		break;
	case 1:
		call_from_storage(s, in);
		break;
	case 2:
		call_accessors(s, in);
		break;
	case 3:
		call_view(s, in);
		break;
	case 4:
		call_reshape_mode(s, in);
		break;
	case 5:
		call_op(s, in);
		break;
	default:
		call_release(s, in);
		break;
	}
	s->call++;
}

void
api_tensor_fini(struct api_tensor *s)
{
	for (int i = 0; i < API_TENSORS; i++)
		cow_tensor_release(s->pool[i]);
	cow_storage_release(s->storage);
	memset(s, 0, sizeof *s);
}
