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
 * (NULL); its effective shadow is then the storage's DEFAULT shadow, part
 * of the storage's simulation state, which does not exist until the first
 * simulated lazy copy of the storage. Until then nothing is allocated,
 * refcounted or bumped on any access, and the storage's only trace of the
 * simulation is its NULL state pointer.
 *
 * Generations: the storage's physical generation counts writes through
 * any shadow since the first simulated copy; each shadow's generation is
 * the physical generation right after its set's last write (or when it was
 * created). An access whose shadow generation differs from the physical one
 * follows a write through another shadow set: the program depends on
 * reshape aliasing. The tensor layer (tensor/shadow.c) checks and reports.
 *
 * Everything here is called by the tensor layer; storage.c only creates
 * the pointer empty and frees the state on release.
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

/*
 * A storage's simulation state, made by its first simulated lazy copy and
 * freed with the storage: the default shadow, the physical generation and
 * the warn-once flag. The storage holds only the pointer to it, so the
 * simulation costs an unshadowed storage one NULL field.
 */
typedef struct cow__shadow_state {
	/* The shadow of every tensor on the storage that holds none of its
	 * own. No tensor takes a reference to it; the state owns it. */
	cow__shadow_t dflt;
	/* Physical generation: writes through any shadow since the state
	 * exists. Synchronization: atomic, relaxed (cow__atomic_*); bumped
	 * only by writes. */
	cow__atomic_u64_t physical;
	/* Non-zero once an aliasing warning was reported for the storage
	 * (warn-once policy). Synchronization: atomic (compare-and-swap). */
	cow__atomic_u64_t warned;
} cow__shadow_state_t;

/* A new shadow with one reference and generation @generation, from @alloc;
 * NULL (COW_ENOMEM) on failure. */
cow__shadow_t *cow__shadow_new(cow_allocator_t *alloc, uint64_t generation);

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

/* A new simulation state (generations 0, nothing warned) from @alloc;
 * NULL (COW_ENOMEM) on failure. */
cow__shadow_state_t *cow__shadow_state_new(cow_allocator_t *alloc);

/* Free a state that no storage holds, or the one of a storage being freed.
 * NULL does nothing. */
void cow__shadow_state_free(cow__shadow_state_t *state);

/*
 * The storage's simulation state, or NULL before its first simulated lazy
 * copy. An acquire load: a state seen here is initialised.
 */
static inline cow__shadow_state_t *
cow__storage_shadow_state(const cow_storage_t *s)
{
	return cow__ptr_load(&s->shadow);
}

/*
 * Make @fresh (which the storage takes) the storage's state unless another
 * thread installed one first; then @fresh is freed. Returns the state in
 * place.
 */
cow__shadow_state_t *cow__storage_shadow_state_install(cow_storage_t *s,
    cow__shadow_state_t *fresh);

/* The physical generation (0 until the first write after the state was
 * made). */
static inline uint64_t
cow__shadow_state_physical(const cow__shadow_state_t *state)
{
	return cow__atomic_load_relaxed(&state->physical);
}

/* One more write through the storage: returns the new generation. */
static inline uint64_t
cow__shadow_state_bump(cow__shadow_state_t *state)
{
	return cow__atomic_fetch_add_relaxed(&state->physical, 1) + 1;
}

/* True for the first caller only (the warn-once policy's claim). */
static inline bool
cow__shadow_state_warn_claim(cow__shadow_state_t *state)
{
	return cow__atomic_load_relaxed(&state->warned) == 0 &&
	    cow__atomic_cas_relaxed(&state->warned, 0, 1);
}

#endif
