/*
 * view_path.c - reified view steps (seed 004: "ViewInfo") and paths.
 *
 * A step records one view op with normalised arguments and both shapes, so
 * that it can be replayed on a new base value (view_copy) and inverted
 * (scatter). Its validation keeps the strided view functions' contract
 * (tensor.h) and their errors; the layout arithmetic is the strided
 * runtime's (views.c), so a functional tensor reports the strides, offset
 * and contiguity the strided runtime would give it, and view(), overlap
 * refusal and as_strided bounds decide the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "functional/functional.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

static const char *const cow_kind_names[COW__FN_KIND_COUNT] = {
	"view", "select", "slice", "narrow", "transpose", "permute",
	"unsqueeze", "squeeze", "squeeze_all", "expand", "diagonal",
	"as_strided"
};

const char *
cow__fn_kind_name(enum cow__fn_kind kind)
{
	return (unsigned)kind < COW__FN_KIND_COUNT ? cow_kind_names[kind] : "?";
}

void
cow__fn_layout_contiguous(struct cow__fn_layout *l, int ndim,
    const int64_t *sizes)
{
	l->ndim = ndim;
	l->offset = 0;
	for (int d = 0; d < ndim; d++)
		l->sizes[d] = sizes[d];
	cow__contiguous_strides(ndim, sizes, l->strides);
}

static void
cow_layout_remove(struct cow__fn_layout *l, int dim)
{
	for (int d = dim; d + 1 < l->ndim; d++) {
		l->sizes[d] = l->sizes[d + 1];
		l->strides[d] = l->strides[d + 1];
	}
	l->ndim--;
}

/* views.c's cow_view_make: an empty view keeps its parent's offset. */
static void
cow_layout_finish(struct cow__fn_layout *l, const struct cow__fn_layout *in)
{
	for (int d = 0; d < l->ndim; d++)
		if (l->sizes[d] == 0)
			l->offset = in->offset;
}

void
cow__fn_step_layout(const struct cow__fn_step *s,
    const struct cow__fn_layout *in, struct cow__fn_layout *l)
{
	int d, a, b;
	int64_t x;

	if (s->kind == COW__FN_AS_STRIDED) {
		l->ndim = s->ndim;
		l->offset = s->a;
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = s->sizes[d];
			l->strides[d] = s->strides[d];
		}
		return;
	}
	*l = *in;
	switch (s->kind) {
	case COW__FN_VIEW:
		/* Validated: the strides exist. */
		(void)cow__view_strides(in->ndim, in->sizes, in->strides,
		    s->ndim, s->sizes, l->strides);
		l->ndim = s->ndim;
		for (d = 0; d < s->ndim; d++)
			l->sizes[d] = s->sizes[d];
		break;
	case COW__FN_SELECT:
		l->offset = cow__sat_add(l->offset,
		    cow__sat_mul(s->a, in->strides[s->dim]));
		cow_layout_remove(l, s->dim);
		break;
	case COW__FN_SLICE:
	case COW__FN_NARROW:
		if (s->b > 0)
			l->offset = cow__sat_add(l->offset,
			    cow__sat_mul(s->a, in->strides[s->dim]));
		l->sizes[s->dim] = s->b;
		if (s->kind == COW__FN_SLICE)
			l->strides[s->dim] = cow__sat_mul(in->strides[s->dim],
			    s->b > 1 ? s->c : 1);
		break;
	case COW__FN_TRANSPOSE:
		x = l->sizes[s->dim];
		l->sizes[s->dim] = l->sizes[s->dim2];
		l->sizes[s->dim2] = x;
		x = l->strides[s->dim];
		l->strides[s->dim] = l->strides[s->dim2];
		l->strides[s->dim2] = x;
		break;
	case COW__FN_PERMUTE:
		for (d = 0; d < s->ndim; d++) {
			l->sizes[d] = in->sizes[s->perm[d]];
			l->strides[d] = in->strides[s->perm[d]];
		}
		break;
	case COW__FN_UNSQUEEZE:
		for (d = l->ndim; d > s->dim; d--) {
			l->sizes[d] = l->sizes[d - 1];
			l->strides[d] = l->strides[d - 1];
		}
		l->sizes[s->dim] = 1;
		l->strides[s->dim] = s->dim < in->ndim ?
		    cow__sat_mul(in->sizes[s->dim], in->strides[s->dim]) : 1;
		l->ndim++;
		break;
	case COW__FN_SQUEEZE:
		if (in->sizes[s->dim] == 1)
			cow_layout_remove(l, s->dim);
		break;
	case COW__FN_SQUEEZE_ALL:
		for (d = l->ndim - 1; d >= 0; d--)
			if (l->sizes[d] == 1)
				cow_layout_remove(l, d);
		break;
	case COW__FN_EXPAND: {
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
	case COW__FN_DIAGONAL:
		a = s->dim;
		b = s->dim2;
		if (s->b > 0)
			l->offset = cow__sat_add(l->offset, s->a >= 0 ?
			    cow__sat_mul(s->a, in->strides[b]) :
			    cow__sat_mul(-s->a, in->strides[a]));
		cow_layout_remove(l, a > b ? a : b);
		cow_layout_remove(l, a > b ? b : a);
		l->sizes[l->ndim] = s->b;
		l->strides[l->ndim] = cow__sat_add(in->strides[a],
		    in->strides[b]);
		l->ndim++;
		break;
	default:
		break;
	}
	cow_layout_finish(l, in);
}

/* Python's slice bound (views.c). */
static int64_t
cow_slice_bound(int64_t v, int64_t size)
{
	if (v < 0)
		v = v < -size ? 0 : v + size;
	return v > size ? size : v;
}

/* Validation of each kind; writes normalised arguments into @s. */
static cow_status_t
cow_step_check(struct cow__fn_step *s, const struct cow__fn_layout *in,
    size_t itemsize, size_t base_nbytes, const char *func)
{
	char x[COW__SHAPE_STR_MAX], y[COW__SHAPE_STR_MAX], z[COW__SHAPE_STR_MAX];
	int64_t size, n, strides[COW__FN_MAXD];
	cow_status_t st;
	int d;

	switch (s->kind) {
	case COW__FN_VIEW:
		if ((st = cow__shape_infer(cow__shape_numel(in->ndim,
		    in->sizes), s->ndim, s->sizes, s->sizes, func)) != COW_OK)
			return st;
		if (!cow__view_strides(in->ndim, in->sizes, in->strides,
		    s->ndim, s->sizes, strides))
			return cow__error(COW_ESHAPE, func,
			    "shape %s is not compatible with sizes %s and "
			    "strides %s (a dimension spans non-contiguous "
			    "memory; use reshape)",
			    cow__shape_str(x, s->ndim, s->sizes),
			    cow__shape_str(y, in->ndim, in->sizes),
			    cow__shape_str(z, in->ndim, in->strides));
		return COW_OK;
	case COW__FN_SELECT:
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
	case COW__FN_SLICE:
		if ((st = cow__wrap_dim(s->dim, in->ndim, &d, func)) != COW_OK)
			return st;
		if (s->c <= 0)
			return cow__error(COW_EINVAL, func,
			    "step %lld must be positive", (long long)s->c);
		size = in->sizes[d];
		s->a = cow_slice_bound(s->a, size);
		s->b = cow_slice_bound(s->b, size);
		n = s->b > s->a ? (s->b - s->a - 1) / s->c + 1 : 0;
		s->dim = d;
		s->b = n;
		return COW_OK;
	case COW__FN_NARROW:
		if ((st = cow__wrap_dim(s->dim, in->ndim, &d, func)) != COW_OK)
			return st;
		size = in->sizes[d];
		if (s->a < -size || s->a > size)
			return cow__error(COW_ERANGE, func,
			    "start %lld out of range [%lld, %lld] for dim %d",
			    (long long)s->a, (long long)-size, (long long)size,
			    d);
		if (s->a < 0)
			s->a += size;
		if (s->b < 0 || s->b > size - s->a)
			return cow__error(COW_ERANGE, func,
			    "length %lld out of range [0, %lld] for start %lld "
			    "of dim %d", (long long)s->b,
			    (long long)(size - s->a), (long long)s->a, d);
		s->dim = d;
		return COW_OK;
	case COW__FN_TRANSPOSE:
		if ((st = cow__wrap_dim(s->dim, in->ndim, &s->dim, func)) !=
		    COW_OK ||
		    (st = cow__wrap_dim(s->dim2, in->ndim, &s->dim2, func)) !=
		    COW_OK)
			return st;
		return COW_OK;
	case COW__FN_PERMUTE: {
		bool seen[COW__FN_MAXD] = {false};

		if (s->ndim != in->ndim)
			return cow__error(COW_ESHAPE, func,
			    "%d dims given for a tensor with %d dimensions",
			    s->ndim, in->ndim);
		for (int i = 0; i < s->ndim; i++) {
			int raw = s->perm[i];

			if ((st = cow__wrap_dim(raw, s->ndim, &d, func)) !=
			    COW_OK)
				return st;
			if (seen[d])
				return cow__error(COW_EINVAL, func,
				    "dim %d appears twice in the permutation",
				    raw);
			seen[d] = true;
			s->perm[i] = d;
		}
		return COW_OK;
	}
	case COW__FN_UNSQUEEZE:
		if (in->ndim == COW_TENSOR_MAX_NDIM)
			return cow__error(COW_ERANGE, func,
			    "the tensor already has the maximum of %d "
			    "dimensions", COW_TENSOR_MAX_NDIM);
		return cow__wrap_dim(s->dim, in->ndim + 1, &s->dim, func);
	case COW__FN_SQUEEZE:
		return cow__wrap_dim(s->dim, in->ndim, &s->dim, func);
	case COW__FN_SQUEEZE_ALL:
		return COW_OK;
	case COW__FN_EXPAND: {
		int lead;

		if (s->ndim < in->ndim || s->ndim > COW_TENSOR_MAX_NDIM)
			return cow__error(COW_ERANGE, func,
			    "ndim %d out of range [%d, %d]", s->ndim, in->ndim,
			    COW_TENSOR_MAX_NDIM);
		lead = s->ndim - in->ndim;
		for (d = 0; d < s->ndim; d++) {
			int od = d - lead;
			int64_t want = s->sizes[d];

			if (want == -1 && od >= 0)
				want = in->sizes[od];
			if (want < 0)
				return cow__error(COW_EINVAL, func,
				    "size %lld at dim %d is invalid%s",
				    (long long)s->sizes[d], d,
				    s->sizes[d] == -1 ? " (-1 is only allowed "
				    "for existing dims)" : "");
			if (od >= 0 && in->sizes[od] != want &&
			    in->sizes[od] != 1)
				return cow__error(COW_ESHAPE, func,
				    "cannot expand shape %s to %s: dim %d has "
				    "size %lld, not 1",
				    cow__shape_str(x, in->ndim, in->sizes),
				    cow__shape_str(y, s->ndim, s->sizes), od,
				    (long long)in->sizes[od]);
			strides[d] = want; /* resolved sizes */
		}
		for (d = 0; d < s->ndim; d++)
			s->sizes[d] = strides[d];
		return cow__shape_check(s->ndim, s->sizes, itemsize, NULL,
		    NULL, func);
	}
	case COW__FN_DIAGONAL: {
		int64_t n1, n2, off = s->a;
		int a, b;

		if ((st = cow__wrap_dim(s->dim, in->ndim, &a, func)) !=
		    COW_OK ||
		    (st = cow__wrap_dim(s->dim2, in->ndim, &b, func)) != COW_OK)
			return st;
		if (a == b)
			return cow__error(COW_EINVAL, func,
			    "dim1 %d and dim2 %d are the same dimension",
			    s->dim, s->dim2);
		n1 = in->sizes[a];
		n2 = in->sizes[b];
		if (off >= 0)
			n = off >= n2 ? 0 : (n1 < n2 - off ? n1 : n2 - off);
		else
			n = off <= -n1 ? 0 : (n1 + off < n2 ? n1 + off : n2);
		s->dim = a;
		s->dim2 = b;
		s->b = n;
		return COW_OK;
	}
	case COW__FN_AS_STRIDED:
		if ((st = cow__shape_check(s->ndim, s->sizes, itemsize, NULL,
		    NULL, func)) != COW_OK)
			return st;
		return cow__layout_check(s->ndim, s->sizes, s->strides, s->a,
		    itemsize, base_nbytes, func);
	default:
		return cow__error(COW_EINVAL, func, "unknown view kind %d",
		    (int)s->kind);
	}
}

cow_status_t
cow__fn_step_make(struct cow__fn_step *s, const struct cow__fn_layout *in,
    size_t itemsize, size_t base_nbytes, struct cow__fn_layout *out,
    const char *func)
{
	cow_status_t st;

	if ((st = cow_step_check(s, in, itemsize, base_nbytes, func)) != COW_OK)
		return st;
	cow__fn_step_layout(s, in, out);
	s->in_ndim = in->ndim;
	s->out_ndim = out->ndim;
	for (int d = 0; d < in->ndim; d++)
		s->in_sizes[d] = in->sizes[d];
	for (int d = 0; d < out->ndim; d++)
		s->out_sizes[d] = out->sizes[d];
	return COW_OK;
}

/* ------------------------------------------------------------------ */
/* Overlap (the same decision as overlap.c, without an error message).  */

/* ------------------------------------------------------------------ */
/* Paths.                                                                */

static struct cow__fn_path cow_empty_path = {{0}, NULL, 0};

struct cow__fn_path *
cow__fn_path_empty(void)
{
	return &cow_empty_path;
}

static cow_status_t
cow_path_alloc(size_t len, cow_allocator_t *alloc, struct cow__fn_path **out,
    const char *func)
{
	struct cow__fn_path *p;
	size_t bytes = sizeof *p + len * sizeof p->steps[0];

	if ((p = cow__alloc(alloc, bytes, func)) == NULL)
		return COW_ENOMEM;
	cow__ref_init(&p->refs, 1);
	p->alloc = alloc;
	p->len = len;
	*out = p;
	return COW_OK;
}

cow_status_t
cow__fn_path_append(const struct cow__fn_path *p,
    const struct cow__fn_step *s, cow_allocator_t *alloc,
    struct cow__fn_path **out, const char *func)
{
	struct cow__fn_path *r;
	cow_status_t st;

	/* as_strided is absolute over the base: what came before it does
	 * not matter for its value. */
	if (s->kind == COW__FN_AS_STRIDED)
		return cow__fn_path_one(s, alloc, out, func);
	if ((st = cow_path_alloc(p->len + 1, alloc, &r, func)) != COW_OK)
		return st;
	if (p->len > 0)
		memcpy(r->steps, p->steps, p->len * sizeof p->steps[0]);
	r->steps[p->len] = *s;
	*out = r;
	return COW_OK;
}

cow_status_t
cow__fn_path_one(const struct cow__fn_step *s, cow_allocator_t *alloc,
    struct cow__fn_path **out, const char *func)
{
	struct cow__fn_path *r;
	cow_status_t st;

	if ((st = cow_path_alloc(1, alloc, &r, func)) != COW_OK)
		return st;
	r->steps[0] = *s;
	*out = r;
	return COW_OK;
}

void
cow__fn_path_retain(struct cow__fn_path *p)
{
	if (p != &cow_empty_path)
		cow__ref_get(&p->refs);
}

void
cow__fn_path_release(struct cow__fn_path *p)
{
	if (p == NULL || p == &cow_empty_path || !cow__ref_put(&p->refs))
		return;
	cow__free(p->alloc, p,
	    sizeof *p + p->len * sizeof p->steps[0]);
}

/* Steps are compared field by field over what their kind uses (the
 * structs may hold stale bytes elsewhere). */
static bool
cow_step_equal(const struct cow__fn_step *a, const struct cow__fn_step *b)
{
	if (a->kind != b->kind || a->dim != b->dim || a->dim2 != b->dim2 ||
	    a->a != b->a || a->b != b->b || a->c != b->c ||
	    a->ndim != b->ndim || a->in_ndim != b->in_ndim)
		return false;
	for (int d = 0; d < a->in_ndim; d++)
		if (a->in_sizes[d] != b->in_sizes[d])
			return false;
	for (int d = 0; d < a->ndim; d++)
		if (a->sizes[d] != b->sizes[d] ||
		    a->strides[d] != b->strides[d] ||
		    a->perm[d] != b->perm[d])
			return false;
	return true;
}

bool
cow__fn_path_equal(const struct cow__fn_path *a, const struct cow__fn_path *b)
{
	if (a == b)
		return true;
	if (a->len != b->len)
		return false;
	for (size_t i = 0; i < a->len; i++)
		if (!cow_step_equal(&a->steps[i], &b->steps[i]))
			return false;
	return true;
}
