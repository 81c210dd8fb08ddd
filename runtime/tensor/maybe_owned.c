/*
 * maybe_owned.c - the debug bookkeeping of MaybeOwned borrows
 * (docs/tensor.md; the ABI rule is in maybe_owned.h;
 * cow_tensor_expect_contiguous is with the copies, in copy.c).
 *
 * Debug mode (COW_DEBUG_BORROWS): each recorded borrow is a small record
 * linked into its tensor's list, under one process-wide lock (debug builds
 * only, so contention does not matter). cow_tensor_release() of the last
 * reference calls cow__borrow_check_release(), which aborts if the list is
 * not empty, naming where the oldest outstanding borrow was taken.
 * Without COW_DEBUG_BORROWS nothing is recorded and nothing is checked.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cowstore/maybe_owned.h>
#include <cowstore/testing.h>

#include "core/die.h"
#include "core/error.h"
#include "core/fork.h"
#include "core/mutex.h"
#include "tensor/tensor.h"

struct cow__borrow {
	struct cow__borrow *next; /* Synchronization: borrow_lock. */
	struct cow__borrow **prevp; /* Synchronization: borrow_lock. */
	cow_tensor_t *tensor;     /* Read-only after init. */
	const char *file;         /* Read-only after init. */
	int line;                 /* Read-only after init. */
};

/* Same layout in every build (maybe_owned.h, ABI rule). */
_Static_assert(sizeof(cow_maybe_owned_t) == 3 * sizeof(void *),
    "cow_maybe_owned_t must not change size between builds");

static cow__mutex_t borrow_lock = COW__MUTEX_INITIALIZER(COW__RANK_BORROWS);

static const struct cow__fork_hooks borrow_fork_hooks = {
	.mutexes = &borrow_lock, .n_mutexes = 1
};

__attribute__((constructor)) static void
borrow_fork_register(void)
{
	cow__fork_register(COW__RANK_BORROWS, &borrow_fork_hooks);
}

bool
cow_borrow_debug_enabled(void)
{
#ifdef COW_DEBUG_BORROWS
	return true;
#else
	return false;
#endif
}

void *
cow_borrow_debug_begin(cow_tensor_t *t, const char *file, int line)
{
#ifdef COW_DEBUG_BORROWS
	struct cow__borrow *b;

	if (t == NULL)
		return NULL;
	if ((b = malloc(sizeof *b)) == NULL)
		cow__die("out of memory recording a MaybeOwned borrow");
	b->tensor = t;
	b->file = file;
	b->line = line;
	cow__mutex_lock(&borrow_lock);
	/* Append, so the head is the oldest borrow. */
	b->next = NULL;
	b->prevp = &t->borrows;
	while (*b->prevp != NULL)
		b->prevp = &(*b->prevp)->next;
	*b->prevp = b;
	cow__mutex_unlock(&borrow_lock);
	return b;
#else
	(void)t;
	(void)file;
	(void)line;
	return NULL;
#endif
}

void
cow_borrow_debug_end(void *record)
{
	struct cow__borrow *b = record;

	if (b == NULL)
		return;
	cow__mutex_lock(&borrow_lock);
	*b->prevp = b->next;
	if (b->next != NULL)
		b->next->prevp = b->prevp;
	cow__mutex_unlock(&borrow_lock);
	free(b);
}

size_t
cow_borrow_debug_outstanding(const cow_tensor_t *t)
{
	size_t n = 0;

	if (t == NULL)
		return 0;
	cow__mutex_lock(&borrow_lock);
	for (const struct cow__borrow *b = t->borrows; b != NULL; b = b->next)
		n++;
	cow__mutex_unlock(&borrow_lock);
	return n;
}

#ifdef COW_DEBUG_BORROWS
void
cow__borrow_check_release(cow_tensor_t *t)
{
	char msg[512];
	const struct cow__borrow *b;
	size_t n = 0;

	cow__mutex_lock(&borrow_lock);
	b = t->borrows;
	for (const struct cow__borrow *i = b; i != NULL; i = i->next)
		n++;
	if (b != NULL)
		snprintf(msg, sizeof msg, "cow_tensor_release: the last "
		    "reference to tensor %p was released while %zu MaybeOwned "
		    "borrow(s) of it are outstanding; the first was taken at "
		    "%s:%d", (void *)t, n, b->file, b->line);
	cow__mutex_unlock(&borrow_lock);
	if (b != NULL)
		cow__die(msg);
}
#endif
