/*
 * iter.h - the strided iterator every elementwise kernel runs on.
 *
 * An iteration has a shape and up to COW__ITER_MAX_OPS operands, each a
 * base address and one stride per dimension in BYTES (0 for a broadcast
 * dimension or a scalar). Dimensions of size 1 are dropped and adjacent
 * dimensions that every operand walks as one are merged, so a contiguous
 * iteration is a single inner run. The loop function gets the operands'
 * addresses at the start of an inner run, their inner strides and the run
 * length; it returns false to stop early.
 *
 * Addresses are computed from integer offsets (never by stepping a pointer
 * past the end of its object).
 */
#ifndef COW_TENSOR_ITER_H
#define COW_TENSOR_ITER_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/tensor.h>

#define COW__ITER_MAX_OPS 3

typedef bool (*cow__iter_fn)(char *const *ptrs, const int64_t *strides,
    int64_t n, void *arg);

typedef struct cow__iter {
	int ndim;
	int nops;
	bool empty; /* some dimension has size 0 */
	int64_t shape[COW_TENSOR_MAX_NDIM];
	char *base[COW__ITER_MAX_OPS];
	int64_t stride[COW__ITER_MAX_OPS][COW_TENSOR_MAX_NDIM]; /* bytes */
} cow__iter_t;

/* Start an iteration over @shape with no operands yet. */
static inline void
cow__iter_init(cow__iter_t *it, int ndim, const int64_t *shape)
{
	it->ndim = ndim;
	it->nops = 0;
	it->empty = false;
	for (int d = 0; d < ndim; d++) {
		it->shape[d] = shape[d];
		it->empty = it->empty || shape[d] == 0;
	}
}

/* Add an operand: @base, and @strides in elements of @itemsize bytes (NULL:
 * a scalar, stride 0 everywhere). */
static inline void
cow__iter_add(cow__iter_t *it, const void *base, const int64_t *strides,
    size_t itemsize)
{
	int k = it->nops++;

	it->base[k] = (char *)(uintptr_t)base;
	/* A stride is applied only along a dimension longer than 1 of a
	 * non-empty iteration; there it stays inside the operand's storage.
	 * Others may be anything (a size-1 dimension's may be huge): 0. */
	for (int d = 0; d < it->ndim; d++)
		it->stride[k][d] = strides == NULL || it->empty ||
		    it->shape[d] <= 1 ? 0 : strides[d] * (int64_t)itemsize;
}

/* Run @fn over every element. Returns false if @fn stopped early. */
static inline bool
cow__iter_run(const cow__iter_t *it, cow__iter_fn fn, void *arg)
{
	int64_t sh[COW_TENSOR_MAX_NDIM], idx[COW_TENSOR_MAX_NDIM];
	int64_t st[COW__ITER_MAX_OPS][COW_TENSOR_MAX_NDIM];
	int64_t off[COW__ITER_MAX_OPS] = {0}, inner_st[COW__ITER_MAX_OPS];
	char *p[COW__ITER_MAX_OPS];
	int64_t inner;
	int n = 0, nops = it->nops;

	for (int d = 0; d < it->ndim; d++)
		if (it->shape[d] == 0)
			return true;
	/* Coalesce, innermost first: dimension d joins the outermost merged
	 * dimension when every operand steps over d exactly as it would step
	 * past the end of the merged one. */
	for (int d = it->ndim - 1; d >= 0; d--) {
		bool merge = n > 0;

		if (it->shape[d] == 1)
			continue;
		for (int k = 0; k < nops && merge; k++) {
			int64_t next;

			merge = !__builtin_mul_overflow(st[k][n - 1],
			    sh[n - 1], &next) && it->stride[k][d] == next;
		}
		if (merge) {
			sh[n - 1] *= it->shape[d];
			continue;
		}
		sh[n] = it->shape[d];
		for (int k = 0; k < nops; k++)
			st[k][n] = it->stride[k][d];
		idx[n] = 0;
		n++;
	}
	inner = n > 0 ? sh[0] : 1;
	for (int k = 0; k < nops; k++)
		inner_st[k] = n > 0 ? st[k][0] : 0;
	for (;;) {
		int d;

		for (int k = 0; k < nops; k++)
			p[k] = it->base[k] + off[k];
		if (!fn(p, inner_st, inner, arg))
			return false;
		/* Odometer over the outer dimensions. */
		for (d = 1; d < n; d++) {
			if (++idx[d] < sh[d]) {
				for (int k = 0; k < nops; k++)
					off[k] += st[k][d];
				break;
			}
			idx[d] = 0;
			for (int k = 0; k < nops; k++)
				off[k] -= st[k][d] * (sh[d] - 1);
		}
		if (d >= n)
			return true;
	}
}

#endif
