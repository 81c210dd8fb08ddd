/*
 * tensor_model.c - the naive reference of fuzz_tensor (tensor_model.h).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_model.h"

__extension__ typedef __int128 i128;

bool
tm_is_float(cow_dtype_t dtype)
{
	return dtype == COW_DTYPE_FLOAT32 || dtype == COW_DTYPE_FLOAT64;
}

bool
tm_dtype_valid(int dtype)
{
	return dtype >= 0 && dtype < COW_DTYPE_COUNT;
}

int64_t
tm_dtype_size(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_BOOL:
	case COW_DTYPE_UINT8:
		return 1;
	case COW_DTYPE_INT32:
	case COW_DTYPE_FLOAT32:
		return 4;
	default:
		return 8;
	}
}

/* Integers modulo 2^bits, from a 64-bit two's complement value. */
static int64_t
wrap_int(cow_dtype_t dtype, uint64_t u)
{
	switch (dtype) {
	case COW_DTYPE_BOOL:
		return u != 0;
	case COW_DTYPE_UINT8:
		return (int64_t)(u & 0xff);
	case COW_DTYPE_INT32:
		return (int64_t)(int32_t)(uint32_t)u;
	default:
		return (int64_t)u;
	}
}

/* Floating to integer: truncation, saturation, NaN to 0. */
static int64_t
saturate(double x, double lo, double hi, int64_t ilo, int64_t ihi)
{
	if (isnan(x))
		return 0;
	if (x <= lo)
		return ilo;
	if (x >= hi)
		return ihi;
	return (int64_t)x;
}

tm_value_t
tm_from_double(cow_dtype_t dtype, double x)
{
	tm_value_t v = {0, 0.0};

	switch (dtype) {
	case COW_DTYPE_BOOL:
		v.i = x != 0.0 || isnan(x);
		break;
	case COW_DTYPE_UINT8:
		v.i = saturate(x, 0.0, 255.0, 0, 255);
		break;
	case COW_DTYPE_INT32:
		v.i = saturate(x, -2147483648.0, 2147483647.0, INT32_MIN,
		    INT32_MAX);
		break;
	case COW_DTYPE_INT64:
		/* 2^63 is the first double above INT64_MAX. */
		v.i = saturate(x, -9223372036854775808.0,
		    9223372036854775808.0, INT64_MIN, INT64_MAX);
		break;
	case COW_DTYPE_FLOAT32:
		v.f = (float)x;
		break;
	default:
		v.f = x;
		break;
	}
	return v;
}

tm_value_t
tm_from_int(cow_dtype_t dtype, int64_t x)
{
	tm_value_t v = {0, 0.0};

	if (dtype == COW_DTYPE_FLOAT32)
		v.f = (float)x; /* one rounding, from the integer */
	else if (dtype == COW_DTYPE_FLOAT64)
		v.f = (double)x;
	else
		v.i = wrap_int(dtype, (uint64_t)x);
	return v;
}

tm_value_t
tm_convert(cow_dtype_t from, tm_value_t v, cow_dtype_t to)
{
	return tm_is_float(from) ? tm_from_double(to, v.f) :
	    tm_from_int(to, v.i);
}

tm_value_t
tm_add(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	tm_value_t r = {0, 0.0};

	if (dtype == COW_DTYPE_BOOL)
		r.i = a.i || b.i;
	else if (dtype == COW_DTYPE_FLOAT32)
		r.f = (float)(a.f + b.f); /* exact in double, one rounding */
	else if (dtype == COW_DTYPE_FLOAT64)
		r.f = a.f + b.f;
	else
		r.i = wrap_int(dtype, (uint64_t)a.i + (uint64_t)b.i);
	return r;
}

tm_value_t
tm_mul(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	tm_value_t r = {0, 0.0};

	if (dtype == COW_DTYPE_BOOL)
		r.i = a.i && b.i;
	else if (dtype == COW_DTYPE_FLOAT32)
		r.f = (float)(a.f * b.f);
	else if (dtype == COW_DTYPE_FLOAT64)
		r.f = a.f * b.f;
	else
		r.i = wrap_int(dtype, (uint64_t)a.i * (uint64_t)b.i);
	return r;
}

tm_value_t
tm_neg(cow_dtype_t dtype, tm_value_t a)
{
	tm_value_t r = {0, 0.0};

	if (tm_is_float(dtype))
		r.f = -a.f;
	else
		r.i = wrap_int(dtype, 0 - (uint64_t)a.i);
	return r;
}

bool
tm_equal_elem(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	return tm_is_float(dtype) ? a.f == b.f : a.i == b.i;
}

bool
tm_same(cow_dtype_t dtype, tm_value_t a, tm_value_t b)
{
	if (!tm_is_float(dtype))
		return a.i == b.i;
	if (isnan(a.f) || isnan(b.f))
		return isnan(a.f) && isnan(b.f);
	return a.f == b.f && signbit(a.f) == signbit(b.f);
}

int64_t
tm_numel(const struct tm_layout *l)
{
	int64_t n = 1;

	for (int d = 0; d < l->ndim; d++)
		if (l->sizes[d] == 0)
			return 0;
	for (int d = 0; d < l->ndim; d++) {
		if (l->sizes[d] < 0 || n > INT64_MAX / l->sizes[d])
			return -1;
		n *= l->sizes[d];
	}
	return n;
}

void
tm_contiguous_strides(struct tm_layout *l)
{
	int64_t s = 1;

	/* Empty tensors may have huge sizes: strides then stop growing
	 * (they are never compared when there are no elements). */
	for (int d = l->ndim - 1; d >= 0; d--) {
		l->strides[d] = s;
		if (l->sizes[d] > 1 && __builtin_mul_overflow(s, l->sizes[d],
		    &s))
			s = 1;
	}
}

bool
tm_is_contiguous(const struct tm_layout *l)
{
	int64_t s = 1;

	if (tm_numel(l) == 0)
		return true;
	for (int d = l->ndim - 1; d >= 0; d--) {
		if (l->sizes[d] == 1)
			continue;
		if (l->strides[d] != s)
			return false;
		s *= l->sizes[d];
	}
	return true;
}

int64_t
tm_pos(const struct tm_layout *l, int64_t k)
{
	int64_t p = l->offset;

	for (int d = l->ndim - 1; d >= 0; d--) {
		p += (k % l->sizes[d]) * l->strides[d];
		k /= l->sizes[d];
	}
	return p;
}

static int
cmp_pos(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

bool
tm_overlaps(const struct tm_layout *l)
{
	int64_t n = tm_numel(l), *pos;
	bool dup = false;

	if (n < 2)
		return false;
	if ((pos = malloc((size_t)n * sizeof *pos)) == NULL)
		abort();
	for (int64_t k = 0; k < n; k++)
		pos[k] = tm_pos(l, k);
	qsort(pos, (size_t)n, sizeof *pos, cmp_pos);
	for (int64_t k = 1; k < n && !dup; k++)
		dup = pos[k] == pos[k - 1];
	free(pos);
	return dup;
}

bool
tm_wrap_dim(int64_t dim, int n, int *out)
{
	if (dim < -n || dim >= n)
		return false;
	*out = (int)(dim < 0 ? dim + n : dim);
	return true;
}

void
tm_init(struct tm_model *m)
{
	memset(m, 0, sizeof *m);
}

void
tm_fini(struct tm_model *m)
{
	for (int i = 0; i < TM_SLOTS; i++)
		free(m->b[i].v);
	memset(m, 0, sizeof *m);
}

int
tm_free_slot(const struct tm_model *m)
{
	for (int i = 0; i < TM_SLOTS; i++)
		if (!m->t[i].live)
			return i;
	return -1;
}

int
tm_pick_live(const struct tm_model *m, unsigned k)
{
	unsigned n = 0;

	for (int i = 0; i < TM_SLOTS; i++)
		n += m->t[i].live;
	if (n == 0)
		return -1;
	k %= n;
	for (int i = 0; i < TM_SLOTS; i++)
		if (m->t[i].live && k-- == 0)
			return i;
	return -1;
}

int
tm_base_new(struct tm_model *m, cow_dtype_t dtype, int64_t n)
{
	for (int i = 0; i < TM_SLOTS; i++) {
		if (m->b[i].live)
			continue;
		free(m->b[i].v);
		m->b[i].v = calloc(n > 0 ? (size_t)n : 1, sizeof(tm_value_t));
		if (m->b[i].v == NULL)
			return -1;
		m->b[i].live = true;
		m->b[i].dtype = dtype;
		m->b[i].n = n;
		return i;
	}
	return -1;
}

void
tm_tensor_set(struct tm_model *m, int slot, int base,
    const struct tm_layout *l)
{
	m->t[slot].live = true;
	m->t[slot].base = base;
	m->t[slot].l = *l;
}

void
tm_tensor_drop(struct tm_model *m, int slot)
{
	int base = m->t[slot].base;

	m->t[slot].live = false;
	for (int i = 0; i < TM_SLOTS; i++)
		if (m->t[i].live && m->t[i].base == base)
			return;
	m->b[base].live = false;
}

tm_value_t
tm_get(const struct tm_model *m, int slot, int64_t k)
{
	const struct tm_tensor *t = &m->t[slot];

	return m->b[t->base].v[tm_pos(&t->l, k)];
}

void
tm_set(struct tm_model *m, int slot, int64_t k, tm_value_t v)
{
	const struct tm_tensor *t = &m->t[slot];

	m->b[t->base].v[tm_pos(&t->l, k)] = v;
}

cow_dtype_t
tm_dtype(const struct tm_model *m, int slot)
{
	return m->b[m->t[slot].base].dtype;
}

/* ------------------------------------------------------------------ */
/* Shape rules.                                                         */

void
tm_unravel(const struct tm_layout *l, int64_t k, int64_t *idx)
{
	for (int d = l->ndim - 1; d >= 0; d--) {
		idx[d] = k % l->sizes[d];
		k /= l->sizes[d];
	}
}

/* Does the byte size of the non-zero (and non-negative) @sizes exceed the
 * storage maximum? *zero: some size is 0 (the tensor is empty anyway). */
bool
tm_bytes_overflow(int ndim, const int64_t *sizes, int64_t esize, bool *zero)
{
	i128 n = 1;
	bool over = false;

	*zero = false;
	for (int d = 0; d < ndim; d++) {
		if (sizes[d] == 0)
			*zero = true;
		else if (!over && sizes[d] > 0) {
			n *= sizes[d];
			if (n * esize > (i128)PTRDIFF_MAX)
				over = true;
		}
	}
	return over;
}

bool
tm_same_shape(const struct tm_layout *a, const struct tm_layout *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int d = 0; d < a->ndim; d++)
		if (a->sizes[d] != b->sizes[d])
			return false;
	return true;
}

/* Broadcast two shapes (aligned at the last dimension). */
bool
tm_broadcast(const struct tm_layout *a, const struct tm_layout *b,
    struct tm_layout *out)
{
	int n = a->ndim > b->ndim ? a->ndim : b->ndim;

	memset(out, 0, sizeof *out);
	out->ndim = n;
	for (int d = 0; d < n; d++) {
		int da = d - (n - a->ndim), db = d - (n - b->ndim);
		int64_t sa = da >= 0 ? a->sizes[da] : 1;
		int64_t sb = db >= 0 ? b->sizes[db] : 1;

		if (sa != sb && sa != 1 && sb != 1)
			return false;
		out->sizes[d] = sa == 1 ? sb : sa;
	}
	tm_contiguous_strides(out);
	return true;
}

/* Element @k (row-major over @shape) of slot @src broadcast to @shape. */
tm_value_t
tm_get_broadcast(const struct tm_model *m, int src,
    const struct tm_layout *shape, int64_t k)
{
	const struct tm_layout *l = &m->t[src].l;
	int64_t idx[TM_MAX_NDIM], j = 0;

	tm_unravel(shape, k, idx);
	for (int d = 0; d < l->ndim; d++) {
		int64_t i = idx[d + shape->ndim - l->ndim];

		j = j * l->sizes[d] + (l->sizes[d] == 1 ? 0 : i);
	}
	return tm_get(m, src, j);
}

/*
 * View rule of the reference: @l's elements in row-major order, laid out
 * with @sizes, must sit at offset + sum(index * stride) for some
 * non-negative strides. Fills @out on success.
 */
bool
tm_affine_view(const struct tm_layout *l, int ndim, const int64_t *sizes,
    struct tm_layout *out)
{
	int64_t n = tm_numel(l), base, unit = 1;

	memset(out, 0, sizeof *out);
	out->ndim = ndim;
	memcpy(out->sizes, sizes, (size_t)ndim * sizeof *sizes);
	tm_contiguous_strides(out);
	out->offset = l->offset;
	if (n == 0)
		return true;
	base = tm_pos(l, 0);
	out->offset = base;
	for (int d = ndim - 1; d >= 0; d--) {
		if (sizes[d] > 1) {
			out->strides[d] = tm_pos(l, unit) - base;
			if (out->strides[d] < 0)
				return false;
		}
		unit *= sizes[d];
	}
	for (int64_t k = 0; k < n; k++)
		if (tm_pos(out, k) != tm_pos(l, k))
			return false;
	return true;
}

void
tm_remove_dim(struct tm_layout *l, int d)
{
	for (int i = d; i < l->ndim - 1; i++) {
		l->sizes[i] = l->sizes[i + 1];
		l->strides[i] = l->strides[i + 1];
	}
	l->ndim--;
}

/* View shapes: one entry may be -1. Returns the allowed errors; fills
 * @shape with the inferred sizes when there are none. */
unsigned
tm_view_shape(const struct tm_layout *l, int ndim, const int64_t *sizes,
    int64_t *shape, bool *ambiguous, unsigned *also_ok)
{
	int infer = -1;
	i128 p = 1;
	int64_t n = tm_numel(l);
	bool zero, bad = false, empty = false;

	*ambiguous = false;
	*also_ok = 0;
	if (ndim >= 0 && ndim <= TM_MAX_NDIM &&
	    tm_bytes_overflow(ndim, sizes, 1, &zero))
		*also_ok = TM_S(COW_EOVERFLOW); /* e.g. [0, 2^62, 4] */
	if (ndim < 0 || ndim > TM_MAX_NDIM)
		return TM_S(COW_ERANGE);
	for (int d = 0; d < ndim; d++) {
		shape[d] = sizes[d];
		if (sizes[d] == -1) {
			if (infer >= 0)
				bad = true;
			infer = d;
		} else if (sizes[d] < 0) {
			bad = true;
		} else if (p <= (i128)INT64_MAX) {
			p *= sizes[d];
		}
		empty = empty || sizes[d] == 0;
	}
	/* A 0 among the given sizes makes their product 0, whatever the
	 * others are (however large, in whatever order). */
	if (empty)
		p = 0;
	if (bad) {
		/* A bad size; the other sizes may be wrong as well, and
		 * the library may see that first. */
		return TM_S(COW_EINVAL) | *also_ok |
		    (p != n ? TM_S(COW_ESHAPE) : 0);
	}
	if (infer >= 0) {
		if (p == 0) {
			*ambiguous = true;
			return TM_S(COW_EINVAL) | TM_S(COW_ESHAPE);
		}
		if (p > (i128)INT64_MAX || n % (int64_t)p != 0)
			return TM_S(COW_ESHAPE) | TM_S(COW_EOVERFLOW);
		shape[infer] = n / (int64_t)p;
		return 0;
	}
	if (p != n)
		return TM_S(COW_ESHAPE) | (p > (i128)INT64_MAX ?
		    TM_S(COW_EOVERFLOW) : 0);
	return 0;
}
