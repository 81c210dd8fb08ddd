/*
 * tensor_test.h - helpers for the tensor unit tests (Criterion): building
 * tensors with known values, walking every index of a shape, reading
 * elements, and asserting a call succeeded (printing cow_last_error()).
 */
#ifndef COW_TENSOR_TEST_H
#define COW_TENSOR_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <cowstore/cowstore.h>

#define TT_OK(call)                                                         \
	do {                                                                \
		cow_status_t tt_st_ = (call);                               \
		cr_assert_eq(tt_st_, COW_OK, "%s -> %s (%s)", #call,        \
		    cow_status_str(tt_st_), cow_last_error());              \
	} while (0)

#define TT_FAILS(call, status, needle)                                      \
	do {                                                                \
		cow_status_t tt_st_ = (call);                               \
		cr_assert_eq(tt_st_, (status), "%s -> %s, want %s (%s)",    \
		    #call, cow_status_str(tt_st_), cow_status_str(status),  \
		    cow_last_error());                                      \
		cr_assert(strstr(cow_last_error(), (needle)) != NULL,       \
		    "%s: message '%s' lacks '%s'", #call, cow_last_error(), \
		    (needle));                                              \
	} while (0)

static inline int64_t
tt_numel(int ndim, const int64_t *sizes)
{
	int64_t n = 1;

	for (int d = 0; d < ndim; d++)
		n *= sizes[d];
	return n;
}

/* The next number of the xorshift64 sequence in *@state (never 0). */
static inline uint64_t
tt_xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* A contiguous tensor of @dtype and shape whose elements are 0, 1, 2, ...
 * in row-major order. */
static inline cow_tensor_t *
tt_arange(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    cow_allocator_t *alloc)
{
	cow_tensor_t *flat, *t;

	TT_OK(cow_tensor_arange(dtype, tt_numel(ndim, sizes), alloc, &flat));
	TT_OK(cow_tensor_view(flat, ndim, sizes, &t));
	cow_tensor_release(flat);
	return t;
}

/* A contiguous tensor from a list of values (converted to @dtype). */
static inline cow_tensor_t *
tt_from(cow_dtype_t dtype, int ndim, const int64_t *sizes,
    const double *values)
{
	cow_tensor_t *t;
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0};
	int64_t n = tt_numel(ndim, sizes);

	TT_OK(cow_tensor_empty(dtype, ndim, sizes, NULL, &t));
	for (int64_t k = 0; k < n; k++) {
		int64_t r = k;

		for (int d = ndim - 1; d >= 0; d--) {
			idx[d] = r % sizes[d];
			r /= sizes[d];
		}
		TT_OK(cow_tensor_set_f64(t, idx, values[k]));
	}
	return t;
}

/* Advance @idx to the next index of @sizes in row-major order; false after
 * the last. Start from all zeros (check numel > 0 first). */
static inline bool
tt_next(int ndim, const int64_t *sizes, int64_t *idx)
{
	for (int d = ndim - 1; d >= 0; d--) {
		if (++idx[d] < sizes[d])
			return true;
		idx[d] = 0;
	}
	return false;
}

static inline double
tt_get(const cow_tensor_t *t, const int64_t *idx)
{
	double v = -12345.0;

	TT_OK(cow_tensor_get_f64(t, idx, &v));
	return v;
}

static inline int64_t
tt_geti(const cow_tensor_t *t, const int64_t *idx)
{
	int64_t v = -12345;

	TT_OK(cow_tensor_get_i64(t, idx, &v));
	return v;
}

/* Assert @t has shape (@ndim, @sizes). */
static inline void
tt_assert_shape(const cow_tensor_t *t, int ndim, const int64_t *sizes)
{
	cr_assert_eq(cow_tensor_ndim(t), ndim, "ndim %d, want %d",
	    cow_tensor_ndim(t), ndim);
	for (int d = 0; d < ndim; d++)
		cr_assert_eq(cow_tensor_sizes(t)[d], sizes[d],
		    "size[%d] = %lld, want %lld", d,
		    (long long)cow_tensor_sizes(t)[d], (long long)sizes[d]);
}

/* Assert every element of @t equals values[k] (row-major). */
static inline void
tt_assert_values(const cow_tensor_t *t, const double *values)
{
	int ndim = cow_tensor_ndim(t);
	const int64_t *sizes = cow_tensor_sizes(t);
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0}, k = 0;

	if (cow_tensor_numel(t) == 0)
		return;
	do {
		double v = tt_get(t, idx);

		cr_assert(v == values[k], "element %lld is %g, want %g",
		    (long long)k, v, values[k]);
		k++;
	} while (tt_next(ndim, sizes, idx));
}

#endif
