/*
 * shape.c - shape and layout arithmetic (see shape.h). Sizes and strides
 * are int64_t and every product is checked for overflow.
 */
#include <stdio.h>
#include <string.h>

#include <cowstore/storage.h>

#include "core/error.h"
#include "tensor/shape.h"

const char *
cow__shape_str(char *buf, int ndim, const int64_t *sizes)
{
	size_t n = 0;

	buf[n++] = '[';
	for (int d = 0; d < ndim && d < COW_TENSOR_MAX_NDIM; d++) {
		int w = snprintf(buf + n, COW__SHAPE_STR_MAX - n, "%s%lld",
		    d == 0 ? "" : ", ", (long long)sizes[d]);

		if (w < 0 || (size_t)w >= COW__SHAPE_STR_MAX - n - 1)
			break;
		n += (size_t)w;
	}
	buf[n++] = ']';
	buf[n] = '\0';
	return buf;
}

/* @ndim is in [0, COW_TENSOR_MAX_NDIM] and @sizes is there if it has any. */
static cow_status_t
shape_check_ndim(int ndim, const int64_t *sizes)
{
	if (ndim < 0 || ndim > COW_TENSOR_MAX_NDIM)
		return cow__error(COW_ERANGE,
		    "ndim %d out of range [0, %d]", ndim, COW_TENSOR_MAX_NDIM);
	if (ndim > 0 && sizes == NULL)
		return cow__error(COW_EINVAL,
		    "sizes is NULL but ndim is %d", ndim);
	return COW_OK;
}

cow_status_t
cow__shape_check(int ndim, const int64_t *sizes, size_t itemsize,
    int64_t *numel, size_t *nbytes)
{
	cow_status_t st;
	int64_t n = 1;
	size_t bytes;

	if ((st = shape_check_ndim(ndim, sizes)) != COW_OK)
		return st;
	for (int d = 0; d < ndim; d++)
		if (sizes[d] < 0)
			return cow__error(COW_EINVAL,
			    "size %lld at dim %d is negative",
			    (long long)sizes[d], d);
	/* An empty shape has 0 elements whatever its other sizes (the
	 * product must not depend on the order of the dimensions). */
	for (int d = 0; d < ndim && n != 0; d++)
		if (sizes[d] == 0)
			n = 0;
	for (int d = 0; d < ndim && n != 0; d++) {
		if (__builtin_mul_overflow(n, sizes[d], &n)) {
			char s[COW__SHAPE_STR_MAX];

			return cow__error(COW_EOVERFLOW,
			    "the element count of shape %s overflows",
			    cow__shape_str(s, ndim, sizes));
		}
	}
	if (__builtin_mul_overflow((size_t)n, itemsize, &bytes) ||
	    bytes > COW_STORAGE_MAX_NBYTES) {
		char s[COW__SHAPE_STR_MAX];

		return cow__error(COW_EOVERFLOW,
		    "shape %s of %zu-byte elements exceeds the maximum of %zu "
		    "bytes", cow__shape_str(s, ndim, sizes), itemsize,
		    (size_t)COW_STORAGE_MAX_NBYTES);
	}
	if (numel != NULL)
		*numel = n;
	if (nbytes != NULL)
		*nbytes = bytes;
	return COW_OK;
}

int64_t
cow__shape_numel(int ndim, const int64_t *sizes)
{
	int64_t n = 1;

	/* An empty shape may have huge sizes besides its 0. */
	for (int d = 0; d < ndim; d++)
		if (sizes[d] == 0)
			return 0;
	for (int d = 0; d < ndim; d++)
		n *= sizes[d];
	return n;
}

void
cow__contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides)
{
	int64_t s = 1;

	for (int d = ndim - 1; d >= 0; d--) {
		strides[d] = s;
		/* A zero size would make every outer stride 0; keep them
		 * positive (the layout holds no element anyway, and its
		 * other sizes may be huge: saturate). */
		if (sizes[d] > 1)
			s = cow__sat_mul(s, sizes[d]);
	}
}

bool
cow__is_contiguous(int ndim, const int64_t *sizes, const int64_t *strides)
{
	int64_t expected = 1;

	for (int d = 0; d < ndim; d++)
		if (sizes[d] == 0)
			return true;
	for (int d = ndim - 1; d >= 0; d--) {
		if (sizes[d] == 1)
			continue;
		if (strides[d] != expected)
			return false;
		expected *= sizes[d];
	}
	return true;
}

cow_status_t
cow__shape_infer(int64_t numel, int ndim, const int64_t *sizes, int64_t *out)
{
	char s[COW__SHAPE_STR_MAX];
	cow_status_t st;
	int64_t known = 1;
	int infer = -1;
	bool empty = false;

	if ((st = shape_check_ndim(ndim, sizes)) != COW_OK)
		return st;
	for (int d = 0; d < ndim; d++) {
		if (sizes[d] == -1) {
			if (infer >= 0)
				return cow__error(COW_EINVAL,
				    "only one dimension can be -1 (dims %d and "
				    "%d are)", infer, d);
			infer = d;
			continue;
		}
		if (sizes[d] < 0)
			return cow__error(COW_EINVAL,
			    "size %lld at dim %d is negative",
			    (long long)sizes[d], d);
		empty = empty || sizes[d] == 0;
	}
	/* The known sizes' product; 0 when one of them is 0, whatever the
	 * others (independent of their order). */
	for (int d = 0; d < ndim && !empty; d++)
		if (d != infer &&
		    __builtin_mul_overflow(known, sizes[d], &known))
			return cow__error(COW_EOVERFLOW,
			    "the element count of shape %s overflows",
			    cow__shape_str(s, ndim, sizes));
	if (empty)
		known = 0;
	if (infer >= 0) {
		if (known == 0 || numel % known != 0)
			return cow__error(COW_ESHAPE,
			    "shape %s is invalid for %lld elements (dim %d "
			    "cannot be inferred)", cow__shape_str(s, ndim, sizes),
			    (long long)numel, infer);
	} else if (known != numel) {
		return cow__error(COW_ESHAPE,
		    "shape %s is invalid for %lld elements",
		    cow__shape_str(s, ndim, sizes), (long long)numel);
	}
	for (int d = 0; d < ndim; d++)
		out[d] = d == infer ? numel / known : sizes[d];
	return COW_OK;
}

/*
 * The old layout is cut into chunks: maximal runs of dimensions (size-1
 * dimensions skipped) in which each dimension's stride is the next inner
 * one's stride times its size, so the run walks memory like one dimension
 * of chunk-numel elements at the chunk's inner stride. A new shape is a view
 * exactly when its dimensions, innermost first, split every chunk in order
 * without straddling two chunks.
 */
bool
cow__view_strides(int ondim, const int64_t *osizes, const int64_t *ostrides,
    int nndim, const int64_t *nsizes, int64_t *nstrides)
{
	int64_t cnumel[COW_TENSOR_MAX_NDIM], cstride[COW_TENSOR_MAX_NDIM];
	int64_t p = 1, next;
	int nchunks = 0, c = 0;

	if (cow__shape_numel(ondim, osizes) == 0) {
		cow__contiguous_strides(nndim, nsizes, nstrides);
		return true;
	}
	for (int d = ondim - 1; d >= 0; d--) {
		if (osizes[d] == 1)
			continue;
		if (nchunks > 0 && !__builtin_mul_overflow(cstride[nchunks - 1],
		    cnumel[nchunks - 1], &next) && ostrides[d] == next) {
			cnumel[nchunks - 1] *= osizes[d];
			continue;
		}
		cnumel[nchunks] = osizes[d];
		cstride[nchunks] = ostrides[d];
		nchunks++;
	}
	for (int d = nndim - 1; d >= 0; d--) {
		if (nsizes[d] == 1) {
			/* Any stride works; take the next one's. p is a
			 * proper divisor of the chunk here, so no overflow. */
			nstrides[d] = c < nchunks ? cstride[c] * p : 1;
			continue;
		}
		if (c == nchunks)
			return false;
		nstrides[d] = cstride[c] * p;
		p *= nsizes[d];
		if (p > cnumel[c] || cnumel[c] % p != 0)
			return false;
		if (p == cnumel[c]) {
			c++;
			p = 1;
		}
	}
	return c == nchunks;
}

cow_status_t
cow__broadcast_shape(int andim, const int64_t *asizes, int bndim,
    const int64_t *bsizes, int *ndim, int64_t *sizes)
{
	int n = andim > bndim ? andim : bndim;

	for (int d = n - 1; d >= 0; d--) {
		int da = d - (n - andim), db = d - (n - bndim);
		int64_t a = da >= 0 ? asizes[da] : 1;
		int64_t b = db >= 0 ? bsizes[db] : 1;

		if (a != b && a != 1 && b != 1) {
			char sa[COW__SHAPE_STR_MAX], sb[COW__SHAPE_STR_MAX];

			return cow__error(COW_ESHAPE,
			    "shapes %s and %s do not broadcast (dim %d: %lld "
			    "vs %lld)", cow__shape_str(sa, andim, asizes),
			    cow__shape_str(sb, bndim, bsizes), d,
			    (long long)a, (long long)b);
		}
		sizes[d] = a == 1 ? b : a;
	}
	*ndim = n;
	return COW_OK;
}

cow_status_t
cow__broadcast_strides(int ndim, const int64_t *sizes, const int64_t *strides,
    int tndim, const int64_t *tsizes, int64_t *out)
{
	char sa[COW__SHAPE_STR_MAX], sb[COW__SHAPE_STR_MAX];

	if (ndim > tndim)
		goto bad;
	for (int td = tndim - 1; td >= 0; td--) {
		int d = td - (tndim - ndim);

		if (d < 0)
			out[td] = 0;
		else if (sizes[d] == tsizes[td])
			out[td] = sizes[d] == 1 ? 0 : strides[d];
		else if (sizes[d] == 1)
			out[td] = 0;
		else
			goto bad;
	}
	return COW_OK;
bad:
	return cow__error(COW_ESHAPE,
	    "cannot broadcast shape %s to shape %s",
	    cow__shape_str(sa, ndim, sizes), cow__shape_str(sb, tndim, tsizes));
}

cow_status_t
cow__layout_extent(int ndim, const int64_t *sizes, const int64_t *strides,
    int64_t offset, size_t itemsize, int64_t *end)
{
	int64_t last = offset, span;
	bool empty = false;

	if (offset < 0)
		return cow__error(COW_EINVAL,
		    "storage offset %lld is negative", (long long)offset);
	for (int d = 0; d < ndim; d++) {
		if (strides[d] < 0)
			return cow__error(COW_EINVAL,
			    "stride %lld at dim %d is negative",
			    (long long)strides[d], d);
		if (sizes[d] == 0)
			empty = true;
	}
	/* The byte just past the last element reached (or, with no elements,
	 * the offset itself). */
	for (int d = 0; d < ndim && !empty; d++) {
		if (__builtin_mul_overflow(strides[d], sizes[d] - 1, &span) ||
		    __builtin_add_overflow(last, span, &last))
			goto overflow;
	}
	if (__builtin_add_overflow(last, empty ? 0 : 1, end) ||
	    __builtin_mul_overflow(*end, (int64_t)itemsize, end))
		goto overflow;
	return COW_OK;
overflow:
	return cow__error(COW_EOVERFLOW,
	    "the layout's extent overflows (offset %lld)", (long long)offset);
}

cow_status_t
cow__layout_check(int ndim, const int64_t *sizes, const int64_t *strides,
    int64_t offset, size_t itemsize, size_t nbytes)
{
	int64_t end;
	cow_status_t st;

	if ((st = cow__layout_extent(ndim, sizes, strides, offset, itemsize,
	    &end)) != COW_OK)
		return st;
	if ((uint64_t)end > nbytes) {
		char s[COW__SHAPE_STR_MAX], t[COW__SHAPE_STR_MAX];

		return cow__error(COW_ERANGE,
		    "sizes %s, strides %s, offset %lld need %lld bytes but the "
		    "storage has %zu", cow__shape_str(s, ndim, sizes),
		    cow__shape_str(t, ndim, strides), (long long)offset,
		    (long long)end, nbytes);
	}
	return COW_OK;
}
