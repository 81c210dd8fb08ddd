/*
 * view_step.c - the view rules (view_step.h): validation, normalisation
 * and layout of each kind of view step.
 *
 * Stride and offset arithmetic saturates (cow__sat_mul/add): a view of a
 * tensor with no elements, or along a size-1 dimension, may meet huge values
 * that are never applied. An empty view keeps its parent's offset.
 */
#include "core/error.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tensor/view_step.h"

static const char *const kind_names[COW__STEP_KIND_COUNT] = {
	"view", "select", "slice", "narrow", "transpose", "permute",
	"unsqueeze", "squeeze", "squeeze_all", "expand", "diagonal",
	"as_strided"
};

const char *
cow__step_kind_name(enum cow__step_kind kind)
{
	return (unsigned)kind < COW__STEP_KIND_COUNT ? kind_names[kind] : "?";
}

void
cow__layout_of(const cow_tensor_t *t, struct cow__layout *l)
{
	l->ndim = t->ndim;
	l->offset = t->offset;
	for (int d = 0; d < t->ndim; d++) {
		l->sizes[d] = t->sizes[d];
		l->strides[d] = t->strides[d];
	}
}

void
cow__layout_contiguous(struct cow__layout *l, int ndim, const int64_t *sizes)
{
	l->ndim = ndim;
	l->offset = 0;
	for (int d = 0; d < ndim; d++)
		l->sizes[d] = sizes[d];
	cow__contiguous_strides(ndim, sizes, l->strides);
}

static void
layout_copy(struct cow__layout *l, const struct cow__layout *in)
{
	l->ndim = in->ndim;
	l->offset = in->offset;
	for (int d = 0; d < in->ndim; d++) {
		l->sizes[d] = in->sizes[d];
		l->strides[d] = in->strides[d];
	}
}

static void
layout_remove(struct cow__layout *l, int dim)
{
	for (int d = dim; d + 1 < l->ndim; d++) {
		l->sizes[d] = l->sizes[d + 1];
		l->strides[d] = l->strides[d + 1];
	}
	l->ndim--;
}

void
cow__view_step_layout(const struct cow__view_step *s,
    const struct cow__layout *in, struct cow__layout *l)
{
	int d, a, b;
	int64_t x;

	if (s->kind == COW__STEP_AS_STRIDED) {
		l->ndim = s->ndim;
		l->offset = s->a;
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = s->sizes[d];
			l->strides[d] = s->strides[d];
		}
		return;
	}
	layout_copy(l, in);
	switch (s->kind) {
	case COW__STEP_VIEW:
		/* Validated: the strides exist. */
		(void)cow__view_strides(in->ndim, in->sizes, in->strides,
		    s->ndim, s->sizes, l->strides);
		l->ndim = s->ndim;
		for (d = 0; d < s->ndim; d++)
			l->sizes[d] = s->sizes[d];
		break;
	case COW__STEP_SELECT:
		l->offset = cow__sat_add(l->offset,
		    cow__sat_mul(s->a, in->strides[s->dim]));
		layout_remove(l, s->dim);
		break;
	case COW__STEP_SLICE:
	case COW__STEP_NARROW:
		/* An empty slice keeps the offset: start may be one past the
		 * end. */
		if (s->b > 0)
			l->offset = cow__sat_add(l->offset,
			    cow__sat_mul(s->a, in->strides[s->dim]));
		l->sizes[s->dim] = s->b;
		if (s->kind == COW__STEP_SLICE)
			l->strides[s->dim] = cow__sat_mul(in->strides[s->dim],
			    s->b > 1 ? s->c : 1);
		break;
	case COW__STEP_TRANSPOSE:
		x = l->sizes[s->dim];
		l->sizes[s->dim] = l->sizes[s->dim2];
		l->sizes[s->dim2] = x;
		x = l->strides[s->dim];
		l->strides[s->dim] = l->strides[s->dim2];
		l->strides[s->dim2] = x;
		break;
	case COW__STEP_PERMUTE:
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = in->sizes[s->perm[d]];
			l->strides[d] = in->strides[s->perm[d]];
		}
		break;
	case COW__STEP_UNSQUEEZE:
		for (d = l->ndim; d > s->dim; d--) {
			l->sizes[d] = l->sizes[d - 1];
			l->strides[d] = l->strides[d - 1];
		}
		l->sizes[s->dim] = 1;
		/* The stride a dense layout would give it (any value is
		 * valid). */
		l->strides[s->dim] = s->dim < in->ndim ?
		    cow__sat_mul(in->sizes[s->dim], in->strides[s->dim]) : 1;
		l->ndim++;
		break;
	case COW__STEP_SQUEEZE:
		if (in->sizes[s->dim] == 1)
			layout_remove(l, s->dim);
		break;
	case COW__STEP_SQUEEZE_ALL:
		for (d = l->ndim - 1; d >= 0; d--)
			if (l->sizes[d] == 1)
				layout_remove(l, d);
		break;
	case COW__STEP_EXPAND: {
		int lead = s->ndim - in->ndim;

		l->ndim = s->ndim;
		for (d = 0; d < s->ndim; d++) {
			int od = d - lead;

			l->sizes[d] = s->sizes[d];
			if (od < 0)
				l->strides[d] = 0;
			else if (in->sizes[od] == s->sizes[d])
				l->strides[d] = in->strides[od];
			else
				l->strides[d] = 0;
		}
		break;
	}
	case COW__STEP_DIAGONAL:
		a = s->dim;
		b = s->dim2;
		if (s->b > 0)
			l->offset = cow__sat_add(l->offset, s->a >= 0 ?
			    cow__sat_mul(s->a, in->strides[b]) :
			    cow__sat_mul(-s->a, in->strides[a]));
		layout_remove(l, a > b ? a : b);
		layout_remove(l, a > b ? b : a);
		l->sizes[l->ndim] = s->b;
		l->strides[l->ndim] = cow__sat_add(in->strides[a],
		    in->strides[b]);
		l->ndim++;
		break;
	default:
		break;
	}
	/* An empty view keeps its parent's offset. */
	for (d = 0; d < l->ndim; d++)
		if (l->sizes[d] == 0)
			l->offset = in->offset;
}

/* Python's slice bound: negative counts from the end, then clamp. */
static int64_t
slice_bound(int64_t v, int64_t size)
{
	if (v < 0)
		v = v < -size ? 0 : v + size;
	return v > size ? size : v;
}

static cow_status_t
check_view(const struct cow__view_step *s, const struct cow__layout *in,
    const char *func)
{
	char x[COW__SHAPE_STR_MAX], y[COW__SHAPE_STR_MAX];
	char z[COW__SHAPE_STR_MAX];
	int64_t strides[COW_TENSOR_MAX_NDIM];

	if (cow__view_strides(in->ndim, in->sizes, in->strides, s->ndim,
	    s->sizes, strides))
		return COW_OK;
	return cow__error(COW_ESHAPE, func,
	    "shape %s is not compatible with sizes %s and strides %s "
	    "(a dimension spans non-contiguous memory; use reshape)",
	    cow__shape_str(x, s->ndim, s->sizes),
	    cow__shape_str(y, in->ndim, in->sizes),
	    cow__shape_str(z, in->ndim, in->strides));
}

static cow_status_t
check_select(struct cow__view_step *s, const struct cow__layout *in,
    const char *func)
{
	cow_status_t st;
	int64_t size;
	int d;

	if ((st = cow__wrap_dim(s->dim, in->ndim, &d, func)) != COW_OK)
		return st;
	size = in->sizes[d];
	if (s->a < -size || s->a >= size)
		return cow__error(COW_ERANGE, func,
		    "index %lld out of range for dim %d of size %lld",
		    (long long)s->a, d, (long long)size);
	s->dim = d;
	if (s->a < 0)
		s->a += size;
	return COW_OK;
}

static cow_status_t
check_slice(struct cow__view_step *s, const struct cow__layout *in,
    const char *func)
{
	cow_status_t st;
	int64_t size;
	int d;

	if ((st = cow__wrap_dim(s->dim, in->ndim, &d, func)) != COW_OK)
		return st;
	if (s->c <= 0)
		return cow__error(COW_EINVAL, func,
		    "step %lld must be positive", (long long)s->c);
	size = in->sizes[d];
	s->a = slice_bound(s->a, size);
	s->b = slice_bound(s->b, size);
	/* From here on b is the length. */
	s->b = s->b > s->a ? (s->b - s->a - 1) / s->c + 1 : 0;
	s->dim = d;
	return COW_OK;
}

static cow_status_t
check_narrow(struct cow__view_step *s, const struct cow__layout *in,
    const char *func)
{
	cow_status_t st;
	int64_t size;
	int d;

	if ((st = cow__wrap_dim(s->dim, in->ndim, &d, func)) != COW_OK)
		return st;
	size = in->sizes[d];
	if (s->a < -size || s->a > size)
		return cow__error(COW_ERANGE, func,
		    "start %lld out of range [%lld, %lld] for dim %d",
		    (long long)s->a, (long long)-size, (long long)size, d);
	if (s->a < 0)
		s->a += size;
	if (s->b < 0 || s->b > size - s->a)
		return cow__error(COW_ERANGE, func,
		    "length %lld out of range [0, %lld] for start %lld of dim "
		    "%d", (long long)s->b, (long long)(size - s->a),
		    (long long)s->a, d);
	s->dim = d;
	return COW_OK;
}

/* The view function checked the count of entries against @in's. */
static cow_status_t
check_permute(struct cow__view_step *s, const char *func)
{
	bool seen[COW_TENSOR_MAX_NDIM] = {false};
	cow_status_t st;
	int d;

	for (int i = 0; i < s->ndim; i++) {
		int raw = s->perm[i];

		if ((st = cow__wrap_dim(raw, s->ndim, &d, func)) != COW_OK)
			return st;
		if (seen[d])
			return cow__error(COW_EINVAL, func,
			    "dim %d appears twice in the permutation", raw);
		seen[d] = true;
		s->perm[i] = d;
	}
	return COW_OK;
}

/* The view function checked the count of entries (in [@in's ndim,
 * COW_TENSOR_MAX_NDIM]). */
static cow_status_t
check_expand(struct cow__view_step *s, const struct cow__layout *in,
    size_t itemsize, const char *func)
{
	char x[COW__SHAPE_STR_MAX], y[COW__SHAPE_STR_MAX];
	int64_t want[COW_TENSOR_MAX_NDIM];
	int lead = s->ndim - in->ndim;

	for (int d = 0; d < s->ndim; d++) {
		int od = d - lead;

		want[d] = s->sizes[d];
		if (want[d] == -1 && od >= 0)
			want[d] = in->sizes[od];
		if (want[d] < 0)
			return cow__error(COW_EINVAL, func,
			    "size %lld at dim %d is invalid%s",
			    (long long)s->sizes[d], d, s->sizes[d] == -1 ?
			    " (-1 is only allowed for existing dims)" : "");
		if (od >= 0 && in->sizes[od] != want[d] && in->sizes[od] != 1)
			return cow__error(COW_ESHAPE, func,
			    "cannot expand shape %s to %s: dim %d has size "
			    "%lld, not 1",
			    cow__shape_str(x, in->ndim, in->sizes),
			    cow__shape_str(y, s->ndim, s->sizes), od,
			    (long long)in->sizes[od]);
	}
	for (int d = 0; d < s->ndim; d++)
		s->sizes[d] = want[d];
	return cow__shape_check(s->ndim, s->sizes, itemsize, NULL, NULL, func);
}

static cow_status_t
check_diagonal(struct cow__view_step *s, const struct cow__layout *in,
    const char *func)
{
	int64_t n1, n2, off = s->a;
	cow_status_t st;
	int a, b;

	if ((st = cow__wrap_dim(s->dim, in->ndim, &a, func)) != COW_OK ||
	    (st = cow__wrap_dim(s->dim2, in->ndim, &b, func)) != COW_OK)
		return st;
	if (a == b)
		return cow__error(COW_EINVAL, func,
		    "dim1 %d and dim2 %d are the same dimension", s->dim,
		    s->dim2);
	n1 = in->sizes[a];
	n2 = in->sizes[b];
	/* Element k of the diagonal is [k, k + offset] (offset >= 0) or
	 * [k - offset, k] (offset < 0) in (dim1, dim2). */
	if (off >= 0)
		s->b = off >= n2 ? 0 : (n1 < n2 - off ? n1 : n2 - off);
	else
		s->b = off <= -n1 ? 0 : (n1 + off < n2 ? n1 + off : n2);
	s->dim = a;
	s->dim2 = b;
	return COW_OK;
}

/* Validation of each kind; writes normalised arguments into @s. */
static cow_status_t
step_check(struct cow__view_step *s, const struct cow__layout *in,
    size_t itemsize, size_t nbytes, const char *func)
{
	switch (s->kind) {
	case COW__STEP_VIEW:
		return check_view(s, in, func);
	case COW__STEP_SELECT:
		return check_select(s, in, func);
	case COW__STEP_SLICE:
		return check_slice(s, in, func);
	case COW__STEP_NARROW:
		return check_narrow(s, in, func);
	case COW__STEP_TRANSPOSE: {
		cow_status_t st;

		if ((st = cow__wrap_dim(s->dim, in->ndim, &s->dim, func)) !=
		    COW_OK)
			return st;
		return cow__wrap_dim(s->dim2, in->ndim, &s->dim2, func);
	}
	case COW__STEP_PERMUTE:
		return check_permute(s, func);
	case COW__STEP_UNSQUEEZE:
		if (in->ndim == COW_TENSOR_MAX_NDIM)
			return cow__error(COW_ERANGE, func,
			    "the tensor already has the maximum of %d "
			    "dimensions", COW_TENSOR_MAX_NDIM);
		return cow__wrap_dim(s->dim, in->ndim + 1, &s->dim, func);
	case COW__STEP_SQUEEZE:
		return cow__wrap_dim(s->dim, in->ndim, &s->dim, func);
	case COW__STEP_SQUEEZE_ALL:
		return COW_OK;
	case COW__STEP_EXPAND:
		return check_expand(s, in, itemsize, func);
	case COW__STEP_DIAGONAL:
		return check_diagonal(s, in, func);
	case COW__STEP_AS_STRIDED:
		/* The view function checked the shape. */
		return cow__layout_check(s->ndim, s->sizes, s->strides, s->a,
		    itemsize, nbytes, func);
	default:
		return cow__error(COW_EINVAL, func, "unknown view kind %d",
		    (int)s->kind);
	}
}

cow_status_t
cow__view_step_apply(struct cow__view_step *s, const struct cow__layout *in,
    size_t itemsize, size_t nbytes, struct cow__layout *out, const char *func)
{
	cow_status_t st;

	if ((st = step_check(s, in, itemsize, nbytes, func)) != COW_OK)
		return st;
	cow__view_step_layout(s, in, out);
	return COW_OK;
}

cow_status_t
cow__view_step_make(struct cow__view_step *s, const struct cow__layout *in,
    size_t itemsize, size_t nbytes, struct cow__layout *out, const char *func)
{
	cow_status_t st;

	if ((st = cow__view_step_apply(s, in, itemsize, nbytes, out, func)) !=
	    COW_OK)
		return st;
	s->in_ndim = in->ndim;
	s->out_ndim = out->ndim;
	for (int d = 0; d < in->ndim; d++)
		s->in_sizes[d] = in->sizes[d];
	for (int d = 0; d < out->ndim; d++)
		s->out_sizes[d] = out->sizes[d];
	return COW_OK;
}

bool
cow__view_step_equal(const struct cow__view_step *a,
    const struct cow__view_step *b)
{
	bool sizes, strides, perm;

	if (a->kind != b->kind || a->dim != b->dim || a->dim2 != b->dim2 ||
	    a->a != b->a || a->b != b->b || a->c != b->c ||
	    a->ndim != b->ndim || a->in_ndim != b->in_ndim)
		return false;
	for (int d = 0; d < a->in_ndim; d++)
		if (a->in_sizes[d] != b->in_sizes[d])
			return false;
	sizes = a->kind == COW__STEP_VIEW || a->kind == COW__STEP_EXPAND ||
	    a->kind == COW__STEP_AS_STRIDED;
	strides = a->kind == COW__STEP_AS_STRIDED;
	perm = a->kind == COW__STEP_PERMUTE;
	for (int d = 0; d < a->ndim; d++)
		if ((sizes && a->sizes[d] != b->sizes[d]) ||
		    (strides && a->strides[d] != b->strides[d]) ||
		    (perm && a->perm[d] != b->perm[d]))
			return false;
	return true;
}
