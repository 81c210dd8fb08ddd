/*
 * overlap.c - does a tensor map two indices to one element? Writing every
 * element of such a tensor (an expanded view, or some as_strided layouts)
 * is refused, as eager tensor libraries do.
 *
 * Fast test: a stride-0 dimension of size > 1 overlaps. Otherwise, with the
 * dimensions sorted by stride, if every stride exceeds the largest offset
 * the smaller-stride dimensions can reach, the offsets are distinct (a
 * mixed-radix numbering); if there are more indices than offsets within
 * reach, two share one. When neither test decides, the answer is found
 * exactly: enumerate every offset, sort, look for a repeat.
 */
#include <stdlib.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "tensor/kernels.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static cow_status_t
overlap_error(const cow_tensor_t *t)
{
	char a[COW__SHAPE_STR_MAX], b[COW__SHAPE_STR_MAX];

	return cow__error(COW_EOVERLAP,
	    "cannot write a tensor whose elements overlap in memory (sizes "
	    "%s, strides %s; an expanded view?): clone it first",
	    cow__shape_str(a, t->ndim, t->sizes),
	    cow__shape_str(b, t->ndim, t->strides));
}

/* Enumerate all @numel offsets of the sorted dimensions and look for a
 * repeat. */
static cow_status_t
overlap_exact(int n, const int64_t *sz, const int64_t *st, int64_t numel,
    cow_allocator_t *alloc, bool *overlaps)
{
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0}, off = 0;
	size_t bytes, k = 0;
	int64_t *all;
	bool dup = false;

	if (__builtin_mul_overflow((size_t)numel, sizeof *all, &bytes) ||
	    bytes > COW_STORAGE_MAX_NBYTES)
		return cow__error(COW_ENOMEM,
		    "%lld elements are too many to check for overlap",
		    (long long)numel);
	if ((all = cow__alloc(alloc, bytes)) == NULL)
		return COW_ENOMEM;
	for (;;) {
		int d;

		all[k++] = off;
		for (d = 0; d < n; d++) {
			if (++idx[d] < sz[d]) {
				off += st[d];
				break;
			}
			idx[d] = 0;
			off -= st[d] * (sz[d] - 1);
		}
		if (d == n)
			break;
	}
	qsort(all, k, sizeof *all, cmp_i64);
	for (size_t i = 1; i < k && !dup; i++)
		dup = all[i] == all[i - 1];
	cow__free(alloc, all, bytes);
	*overlaps = dup;
	return COW_OK;
}

cow_status_t
cow__layout_overlaps(int ndim, const int64_t *sizes, const int64_t *strides,
    cow_allocator_t *alloc, bool *overlaps)
{
	int64_t sz[COW_TENSOR_MAX_NDIM], st[COW_TENSOR_MAX_NDIM], reach = 0;
	int64_t numel = 1;
	int n = 0;

	*overlaps = false;
	for (int d = 0; d < ndim; d++)
		if (sizes[d] == 0)
			return COW_OK;
	for (int d = 0; d < ndim; d++)
		numel = cow__sat_mul(numel, sizes[d]);
	if (numel <= 1)
		return COW_OK;
	for (int d = 0; d < ndim; d++) {
		int i;

		if (sizes[d] == 1)
			continue;
		if (strides[d] == 0) {
			*overlaps = true;
			return COW_OK;
		}
		/* Insertion sort by stride, ascending. */
		for (i = n++; i > 0 && st[i - 1] > strides[d]; i--) {
			st[i] = st[i - 1];
			sz[i] = sz[i - 1];
		}
		st[i] = strides[d];
		sz[i] = sizes[d];
	}
	/* More indices than offsets within reach: two must share one. */
	for (int i = 0; i < n; i++)
		reach = cow__sat_add(reach, cow__sat_mul(st[i], sz[i] - 1));
	if (reach < INT64_MAX && numel > reach + 1) {
		*overlaps = true;
		return COW_OK;
	}
	reach = 0;
	for (int i = 0; i < n; i++) {
		if (st[i] <= reach)
			return overlap_exact(n, sz, st, numel, alloc, overlaps);
		reach += st[i] * (sz[i] - 1);
	}
	return COW_OK;
}

cow_status_t
cow__check_writable(const cow_tensor_t *t)
{
	cow_status_t st;
	bool overlaps;

	if ((st = cow__layout_overlaps(t->ndim, t->sizes, t->strides, t->alloc,
	    &overlaps)) != COW_OK)
		return st;
	return overlaps ? overlap_error(t) : COW_OK;
}
