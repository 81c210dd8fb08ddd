/*
 * shadow.c - the shadow storage object: creation, references, and the
 * storage's simulation state (see shadow.h).
 */
#include "alloc/allocator.h"
#include "storage/shadow.h"

cow__shadow_t *
cow__shadow_new(cow_allocator_t *alloc, uint64_t generation)
{
	cow__shadow_t *sh = cow__alloc(alloc, sizeof *sh);

	if (sh == NULL)
		return NULL;
	cow__ref_init(&sh->refs, 1);
	cow__atomic_store_relaxed(&sh->generation, generation);
	sh->alloc = alloc;
	return sh;
}

void
cow__shadow_retain(cow__shadow_t *sh)
{
	cow__ref_get(&sh->refs);
}

void
cow__shadow_release(cow__shadow_t *sh)
{
	if (sh == NULL || !cow__ref_put(&sh->refs))
		return;
	cow__free(sh->alloc, sh, sizeof *sh);
}

cow__shadow_state_t *
cow__shadow_state_new(cow_allocator_t *alloc)
{
	cow__shadow_state_t *state = cow__alloc(alloc, sizeof *state);

	if (state == NULL)
		return NULL;
	cow__ref_init(&state->dflt.refs, 1);
	cow__atomic_store_relaxed(&state->dflt.generation, 0);
	state->dflt.alloc = alloc;
	cow__atomic_store_relaxed(&state->physical, 0);
	cow__atomic_store_relaxed(&state->warned, 0);
	return state;
}

void
cow__shadow_state_free(cow__shadow_state_t *state)
{
	if (state == NULL)
		return;
	COW__ASSERT(cow__ref_load(&state->dflt.refs) == 1,
	    "a tensor holds a reference to a default shadow");
	cow__free(state->dflt.alloc, state, sizeof *state);
}

cow__shadow_state_t *
cow__storage_shadow_state_install(cow_storage_t *s,
    cow__shadow_state_t *fresh)
{
	cow__shadow_state_t *won;

	/* Simulated lazy copies are reads of the storage, so several
	 * threads may race to install its state: one CAS wins, the losers
	 * free theirs. The release in the install publishes the state's
	 * initialised fields to every later cow__ptr_load. */
	won = cow__ptr_install(&s->shadow, fresh);
	if (won != fresh)
		cow__shadow_state_free(fresh);
	return won;
}
