/*
 * shadow.h - the reshape-alias simulation at the tensor layer
 * (docs/reshape.md): the checks the one read access and the one write access
 * make (access.c), and the simulated lazy copy that COW_RESHAPE_WARN's
 * reshape returns.
 *
 * Fast path: a tensor with no shadow of its own on a storage that never had
 * a simulated lazy copy costs one load of the tensor's field and one load of
 * the storage's simulation-state pointer; nothing else. Everything beyond is
 * out of line (shadow.c).
 *
 * COW_NO_SHADOW (a compile-time switch, used only for the benchmark
 * baseline) compiles the checks out of the access paths.
 */
#ifndef COW_TENSOR_SHADOW_H
#define COW_TENSOR_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

#include <cowstore/shadow.h>

#include "storage/shadow.h"
#include "tensor/tensor.h"

/* What a write access decided before it materialised (see below). */
struct cow__shadow_write {
	cow__shadow_t *shadow;  /* effective shadow; NULL: nothing to do */
	uint64_t physical;      /* the storage's generation at the check */
	uint64_t generation;    /* the shadow's generation at the check */
	cow_shadow_policy_t policy;
};

/* True when @t's accesses must be checked: it has a shadow of its own, or
 * its storage has had a simulated lazy copy. */
static inline bool
cow__shadow_active(const cow_tensor_t *t)
{
#ifdef COW_NO_SHADOW
	(void)t;
	return false;
#else
	return t->shadow != NULL ||
	    cow__storage_shadow_state(t->storage) != NULL;
#endif
}

/* Out of line: the slow paths of the functions below. Cold: the block that
 * leads to them is laid out off the access paths' straight line. */
__attribute__((cold)) cow_status_t cow__shadow_check_read(
    const cow_tensor_t *t, const char *func);
__attribute__((cold)) cow_status_t cow__shadow_check_write(
    const cow_tensor_t *t, struct cow__shadow_write *w, const char *func);
void cow__shadow_commit_write(cow_tensor_t *t,
    const struct cow__shadow_write *w, const char *func);

/*
 * The read check: a read through a shadow set after a write through
 * another one that shares the storage is reported (read-after-write).
 * COW_EALIASING under COW_SHADOW_ERROR; COW_OK otherwise. @func: the
 * event's (tensor.h, cow__tensor_read_data).
 * Changes no generation.
 */
static inline cow_status_t
cow__shadow_on_read(const cow_tensor_t *t, const char *func)
{
	if (!cow__shadow_active(t))
		return COW_OK;
	return cow__shadow_check_read(t, func);
}

/*
 * The write check, in two steps around the materialisation: begin decides
 * (and under COW_SHADOW_ERROR refuses with COW_EALIASING, changing
 * nothing); end, called only once the write access succeeded, reports a
 * write-after-write and bumps the physical generation and the shadow's.
 */
static inline cow_status_t
cow__shadow_write_begin(const cow_tensor_t *t, struct cow__shadow_write *w,
    const char *func)
{
	w->shadow = NULL;
	if (!cow__shadow_active(t))
		return COW_OK;
	return cow__shadow_check_write(t, w, func);
}

static inline void
cow__shadow_write_end(cow_tensor_t *t, const struct cow__shadow_write *w,
    const char *func)
{
	if (w->shadow != NULL)
		cow__shadow_commit_write(t, w, func);
}

/*
 * The simulated lazy copy of COW_RESHAPE_WARN: a tensor over @t's storage
 * (aliasing it, as legacy reshape does) with @t's dtype, the layout *@l
 * and a NEW shadow storage, so that it does not share @t's.
 * The first one on a storage also creates the storage's default shadow.
 * Allocates everything before changing anything: COW_ENOMEM leaves the
 * storage as it was. A read of @t.
 */
cow_status_t cow__shadow_fork(cow_tensor_t *t, const struct cow__layout *l,
    cow_tensor_t **out);

#endif
