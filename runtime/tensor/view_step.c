/*
 * view_step.c - the view rules (view_step.h) for a step of any kind: what
 * the functionalization layer applies, records and compares.
 */
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
cow__view_step_layout(const struct cow__view_step *s, struct cow__layout *l)
{
	cow__step_layout(s->kind, s, l);
}

cow_status_t
cow__view_step_apply(struct cow__view_step *s, struct cow__layout *l,
    size_t itemsize, size_t nbytes)
{
	return cow__step_apply(s->kind, s, l, itemsize, nbytes);
}

cow_status_t
cow__view_step_make(struct cow__view_step *s, struct cow__layout *l,
    size_t itemsize, size_t nbytes)
{
	cow_status_t st;

	if ((st = cow__step_check(s->kind, s, l, itemsize, nbytes)) !=
	    COW_OK)
		return st;
	s->in_ndim = l->ndim;
	for (int d = 0; d < l->ndim; d++)
		s->in_sizes[d] = l->sizes[d];
	cow__step_layout(s->kind, s, l);
	s->out_ndim = l->ndim;
	for (int d = 0; d < l->ndim; d++)
		s->out_sizes[d] = l->sizes[d];
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
