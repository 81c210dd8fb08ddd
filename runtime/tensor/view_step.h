/*
 * view_step.h - the rules of the view functions, written once: a view op
 * reified as a step (its kind and arguments), its validation and
 * normalisation against the parent's layout, and the layout it gives.
 *
 * The public view functions (views.c) build a step from their arguments
 * and apply it to the tensor's layout. The functionalization layer records
 * the same steps in its paths and replays them on values, so a functional
 * tensor reports the strides, offset and contiguity the strided runtime
 * would give it, and every view decides and fails the same way, with the
 * same messages, on both.
 */
#ifndef COW_TENSOR_VIEW_STEP_H
#define COW_TENSOR_VIEW_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cowstore/tensor.h>

/* A layout: sizes, strides and offset in elements. */
struct cow__layout {
	int ndim;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM];
	int64_t offset;
};

enum cow__step_kind {
	COW__STEP_VIEW,        /* view and reshape: sizes */
	COW__STEP_SELECT,      /* dim, a = index */
	COW__STEP_SLICE,       /* dim, a = start, b = end; normalised: b =
	                          length, c = step */
	COW__STEP_NARROW,      /* dim, a = start, b = length */
	COW__STEP_TRANSPOSE,   /* dim, dim2 */
	COW__STEP_PERMUTE,     /* perm[ndim] */
	COW__STEP_UNSQUEEZE,   /* dim */
	COW__STEP_SQUEEZE,     /* dim (removed only if its size is 1) */
	COW__STEP_SQUEEZE_ALL,
	COW__STEP_EXPAND,      /* sizes */
	COW__STEP_DIAGONAL,    /* a = offset, dim, dim2; normalised: b =
	                          length */
	COW__STEP_AS_STRIDED,  /* sizes, strides, a = storage offset
	                          (absolute) */
	COW__STEP_KIND_COUNT
};

/*
 * One view op. The fields a kind does not use are never read (not even
 * by cow__view_step_equal), so they may stay uninitialised.
 */
struct cow__view_step {
	enum cow__step_kind kind;
	int dim, dim2;
	int64_t a, b, c;
	int ndim;                        /* entries of sizes/strides/perm */
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int64_t strides[COW_TENSOR_MAX_NDIM];
	int perm[COW_TENSOR_MAX_NDIM];
	/* The parent's shape and the result's (cow__view_step_make). */
	int in_ndim, out_ndim;
	int64_t in_sizes[COW_TENSOR_MAX_NDIM];
	int64_t out_sizes[COW_TENSOR_MAX_NDIM];
};

/* A step of @kind with every scalar argument 0 and no array entries. */
static inline void
cow__view_step_init(struct cow__view_step *s, enum cow__step_kind kind)
{
	s->kind = kind;
	s->dim = s->dim2 = 0;
	s->a = s->b = s->c = 0;
	s->ndim = 0;
	s->in_ndim = s->out_ndim = 0;
}

/* "view", "select", ... */
const char *cow__step_kind_name(enum cow__step_kind kind);

/* @t's layout. */
void cow__layout_of(const cow_tensor_t *t, struct cow__layout *l);

/* Row-major layout of a shape at offset 0. */
void cow__layout_contiguous(struct cow__layout *l, int ndim,
    const int64_t *sizes);

/*
 * Validate the step @s against its parent's layout @in, with the errors
 * and messages of the view function @func, normalise its arguments in
 * place, and write the result's layout to @out. @itemsize and @nbytes (the
 * bytes an as_strided layout must stay inside: the storage's, or a
 * functional group's base) bound the shape and as_strided.
 *
 * The view function has already turned its arguments into the step (the
 * checks that need the raw arguments: NULL arrays, the count of entries,
 * a view's shape inferred for the parent's element count).
 */
cow_status_t cow__view_step_apply(struct cow__view_step *s,
    const struct cow__layout *in, size_t itemsize, size_t nbytes,
    struct cow__layout *out, const char *func);

/* cow__view_step_apply(), and the step records both shapes (in_ndim,
 * in_sizes, out_ndim, out_sizes): what a replay or an inversion needs. */
cow_status_t cow__view_step_make(struct cow__view_step *s,
    const struct cow__layout *in, size_t itemsize, size_t nbytes,
    struct cow__layout *out, const char *func);

/* The layout of a validated step applied to @in (a layout of the step's
 * parent shape). as_strided ignores @in: it is absolute. */
void cow__view_step_layout(const struct cow__view_step *s,
    const struct cow__layout *in, struct cow__layout *out);

/* Do two validated steps make the same view of the same parent shape?
 * Compares what their kind uses. */
bool cow__view_step_equal(const struct cow__view_step *a,
    const struct cow__view_step *b);

#endif
