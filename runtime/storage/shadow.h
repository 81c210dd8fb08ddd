/*
 * shadow.h - shadow storages and a storage's physical generation, for the
 * reshape-alias simulation (docs/reshape.md).
 *
 * A shadow storage stands for the storage a set of tensors WOULD have if
 * reshape returned lazy copies: tensors that would be lazy copies of each
 * other have different shadows; views share their base's. It is a small
 * refcounted object with a generation.
 *
 * Null-shadow optimisation: a tensor normally holds no shadow
 * (NULL); its effective shadow is then the storage's DEFAULT shadow, which
 * does not exist until the first simulated lazy copy of the storage. Until
 * then nothing is allocated, refcounted or bumped on any access.
 *
 * Generations: the storage's physical generation counts writes through
 * any shadow since the first simulated copy; each shadow's generation is
 * the physical generation right after its set's last write (or when it was
 * created). An access whose shadow generation differs from the physical one
 * follows a write through another shadow set: the program depends on
 * reshape aliasing. The tensor layer (tensor/shadow.c) checks and reports.
 *
 * Everything here is called by the tensor layer; storage.c only creates
 * the fields empty and drops the default shadow on release.
 */
#ifndef COW_STORAGE_SHADOW_H
#define COW_STORAGE_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

#include "core/atomic.h"
#include "core/refcount.h"
#include "storage/storage.h"

typedef struct cow__shadow {
	/* Tensors holding it, plus the storage for its default shadow.
	 * Synchronization: atomic (cow__ref_*). */
	cow__refcount_t refs;
	/* Synchronization: atomic, relaxed (cow__atomic_*): it publishes
	 * nothing. Written only by writes through the storage it shadows,
	 * which the user serialises against every other use of it. */
	cow__atomic_u64_t generation;
	cow_allocator_t *alloc; /* Read-only after init. */
} cow__shadow_t;

/* A new shadow with one reference and generation @generation, from @alloc;
 * NULL (COW_ENOMEM naming @func) on failure. */
cow__shadow_t *cow__shadow_new(cow_allocator_t *alloc, uint64_t generation,
    const char *func);

/* Add a reference; the caller holds one. */
void cow__shadow_retain(cow__shadow_t *sh);

/* Drop a reference; the last frees the shadow. NULL does nothing. */
void cow__shadow_release(cow__shadow_t *sh);

static inline uint64_t
cow__shadow_generation(const cow__shadow_t *sh)
{
	return cow__atomic_load_relaxed(&sh->generation);
}

static inline void
cow__shadow_generation_set(cow__shadow_t *sh, uint64_t generation)
{
	COW__ASSERT(generation >= cow__atomic_load_relaxed(&sh->generation),
	    "a shadow's generation goes back");
	cow__atomic_store_relaxed(&sh->generation, generation);
}

/*
 * The storage's default shadow, or NULL before its first simulated lazy
 * copy. An acquire load: a shadow seen here is initialised.
 */
static inline cow__shadow_t *
cow__storage_default_shadow(const cow_storage_t *s)
{
	return cow__ptr_load(&s->shadow);
}

/*
 * Make @fresh (one reference, which the storage takes) the default shadow
 * unless another thread installed one first; then @fresh is freed. Returns
 * the default shadow in place.
 */
cow__shadow_t *cow__storage_default_shadow_install(cow_storage_t *s,
    cow__shadow_t *fresh);

/* The physical generation (0 until the first write after the first
 * simulated lazy copy). */
static inline uint64_t
cow__storage_generation(const cow_storage_t *s)
{
	return cow__atomic_load_relaxed(&s->generation);
}

/* One more write through the storage: returns the new generation. */
static inline uint64_t
cow__storage_generation_bump(cow_storage_t *s)
{
	return cow__atomic_fetch_add_relaxed(&s->generation, 1) + 1;
}

/* True for the first caller only (the warn-once policy's claim). */
static inline bool
cow__storage_warn_claim(cow_storage_t *s)
{
	return cow__atomic_load_relaxed(&s->warned) == 0 &&
	    cow__atomic_cas_relaxed(&s->warned, 0, 1);
}

#endif
