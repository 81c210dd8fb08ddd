/*
 * shape.h - shape and layout arithmetic shared by creation, views, reshape
 * and ops. Every function that can fail records an error message naming
 * the offending value.
 */
#ifndef COW_TENSOR_SHAPE_H
#define COW_TENSOR_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cowstore/tensor.h>

/* Longest text cow__shape_str() writes: "[" + 16 x "-9223372036854775808, "
 * + "]". */
#define COW__SHAPE_STR_MAX 400

/* "[2, 3]" into @buf (COW__SHAPE_STR_MAX bytes); returns @buf. */
const char *cow__shape_str(char *buf, int ndim, const int64_t *sizes);

/* ndim in [0, COW_TENSOR_MAX_NDIM] (COW_ERANGE), sizes non-NULL when
 * ndim > 0 (COW_EINVAL), every size >= 0 (COW_EINVAL), and the element count
 * times @itemsize fits a storage (COW_EOVERFLOW). *numel and *nbytes may be
 * NULL. */
cow_status_t cow__shape_check(int ndim, const int64_t *sizes, size_t itemsize,
    int64_t *numel, size_t *nbytes);

/* Product of sizes: 0 when a size is 0 (the others may then be huge);
 * otherwise the caller knows the product fits. */
int64_t cow__shape_numel(int ndim, const int64_t *sizes);

/*
 * Saturating arithmetic on strides and offsets (operands >= 0). A layout
 * with elements stays inside its storage, so its strides and offset never
 * saturate; only values that are never applied to an address do (those of
 * an empty layout, or the stride of a size-1 dimension), and they stop at
 * INT64_MAX instead of overflowing.
 */
static inline int64_t
cow__sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static inline int64_t
cow__sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Step @idx to the next index of @sizes in row-major order (the last
 * dimension fastest); false, with @idx back at zeros, after the last. */
static inline bool
cow__shape_next_index(int ndim, const int64_t *sizes, int64_t *idx)
{
	for (int d = ndim - 1; d >= 0; d--) {
		if (++idx[d] < sizes[d])
			return true;
		idx[d] = 0;
	}
	return false;
}

/* Row-major strides for @sizes (saturating when the shape is empty). */
void cow__contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);

/* Row-major dense (size-1 dimensions ignored; no elements: true). */
bool cow__is_contiguous(int ndim, const int64_t *sizes,
    const int64_t *strides);

/*
 * Resolve a requested shape (@ndim entries, at most one -1) for @numel
 * elements into @out. COW_ERANGE (ndim), COW_EINVAL (NULL sizes, a negative
 * size other than one -1, two -1), COW_EOVERFLOW, COW_ESHAPE (wrong element
 * count, or -1 cannot be inferred).
 */
cow_status_t cow__shape_infer(int64_t numel, int ndim, const int64_t *sizes,
    int64_t *out);

/*
 * Strides that let a tensor with (@ondim, @osizes, @ostrides) be seen with
 * the shape (@nndim, @nsizes) (same element count) without moving data.
 * Returns false when no such strides exist.
 */
bool cow__view_strides(int ondim, const int64_t *osizes,
    const int64_t *ostrides, int nndim, const int64_t *nsizes,
    int64_t *nstrides);

/*
 * The broadcast shape of two shapes into (@ndim, @sizes). COW_ESHAPE names
 * both shapes.
 */
cow_status_t cow__broadcast_shape(int andim, const int64_t *asizes,
    int bndim, const int64_t *bsizes, int *ndim, int64_t *sizes);

/*
 * Strides (in elements) that present (@ndim, @sizes, @strides) as the shape
 * (@tndim, @tsizes): broadcast dimensions get stride 0. COW_ESHAPE naming
 * both shapes when it cannot be broadcast.
 */
cow_status_t cow__broadcast_strides(int ndim, const int64_t *sizes,
    const int64_t *strides, int tndim, const int64_t *tsizes, int64_t *out);

/*
 * The bytes a layout reaches from the start of its storage: the byte just
 * past its last element, or, with no elements, the offset in bytes. Every
 * stride and the offset must be non-negative (COW_EINVAL), and the result
 * must not overflow int64 (COW_EOVERFLOW). The shape must have passed
 * cow__shape_check().
 */
cow_status_t cow__layout_extent(int ndim, const int64_t *sizes,
    const int64_t *strides, int64_t offset, size_t itemsize, int64_t *end);

/*
 * Check that a layout lies inside a storage of @nbytes: every stride and the
 * offset non-negative (COW_EINVAL), and the last byte reached below
 * @nbytes (COW_ERANGE naming the byte needed and the size), without
 * overflow (COW_EOVERFLOW). The shape must have passed cow__shape_check().
 */
cow_status_t cow__layout_check(int ndim, const int64_t *sizes,
    const int64_t *strides, int64_t offset, size_t itemsize, size_t nbytes);

#endif
