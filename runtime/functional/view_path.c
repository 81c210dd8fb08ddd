/*
 * view_path.c - paths: reference-counted immutable arrays of view steps
 * (tensor/view_step.h) from an alias group's base to a tensor, which the
 * layer replays on a new base value (view_copy) and inverts (scatter).
 */
#include <string.h>

#include "alloc/allocator.h"
#include "functional/functional.h"

/* ------------------------------------------------------------------ */
/* Paths.                                                                */

static struct cow__fn_path empty_path = {{0}, NULL, 0};

struct cow__fn_path *
cow__fn_path_empty(void)
{
	return &empty_path;
}

static cow_status_t
path_alloc(size_t len, cow_allocator_t *alloc, struct cow__fn_path **out)
{
	struct cow__fn_path *p;
	size_t bytes = sizeof *p + len * sizeof p->steps[0];

	if ((p = cow__alloc(alloc, bytes)) == NULL)
		return COW_ENOMEM;
	cow__ref_init(&p->refs, 1);
	p->alloc = alloc;
	p->len = len;
	*out = p;
	return COW_OK;
}

cow_status_t
cow__fn_path_append(const struct cow__fn_path *p,
    const struct cow__view_step *s, cow_allocator_t *alloc,
    struct cow__fn_path **out)
{
	struct cow__fn_path *r;
	cow_status_t st;

	/* as_strided is absolute over the base: what came before it does
	 * not matter for its value. */
	if (s->kind == COW__STEP_AS_STRIDED)
		return cow__fn_path_one(s, alloc, out);
	if ((st = path_alloc(p->len + 1, alloc, &r)) != COW_OK)
		return st;
	if (p->len > 0)
		memcpy(r->steps, p->steps, p->len * sizeof p->steps[0]);
	r->steps[p->len] = *s;
	*out = r;
	return COW_OK;
}

cow_status_t
cow__fn_path_one(const struct cow__view_step *s, cow_allocator_t *alloc,
    struct cow__fn_path **out)
{
	struct cow__fn_path *r;
	cow_status_t st;

	if ((st = path_alloc(1, alloc, &r)) != COW_OK)
		return st;
	r->steps[0] = *s;
	*out = r;
	return COW_OK;
}

void
cow__fn_path_retain(struct cow__fn_path *p)
{
	if (p != &empty_path)
		cow__ref_get(&p->refs);
}

void
cow__fn_path_release(struct cow__fn_path *p)
{
	if (p == NULL || p == &empty_path || !cow__ref_put(&p->refs))
		return;
	cow__free(p->alloc, p,
	    sizeof *p + p->len * sizeof p->steps[0]);
}

bool
cow__fn_path_equal(const struct cow__fn_path *a, const struct cow__fn_path *b)
{
	if (a == b)
		return true;
	if (a->len != b->len)
		return false;
	for (size_t i = 0; i < a->len; i++)
		if (!cow__view_step_equal(&a->steps[i], &b->steps[i]))
			return false;
	return true;
}
