/*
 * api_boundary.h - the boundary part of fuzz_api (api_boundary.c): random
 * arguments to the functions where memory crosses the library's edge:
 * tensors over external memory (owned, borrowed, read-only), pins, and
 * DLPack export and import in both ABIs.
 */
#ifndef COW_FUZZ_API_BOUNDARY_H
#define COW_FUZZ_API_BOUNDARY_H

#include <stdbool.h>
#include <stddef.h>

#include <cowstore/cowstore.h>

#include "fuzz_input.h"

#define BOUNDARY_TENSORS 4
#define BOUNDARY_EXPORTS 3

struct boundary_export {
	bool versioned;
	void *managed;            /* DLManagedTensor(Versioned) */
};

struct api_boundary {
	cow_tensor_t *pool[BOUNDARY_TENSORS];
	unsigned pins[BOUNDARY_TENSORS];   /* our pins of each pool entry */
	bool home[BOUNDARY_TENSORS];       /* made over borrowed memory */
	struct boundary_export exports[BOUNDARY_EXPORTS];
	cow_allocator_t *capped;  /* refuses large allocations */
	unsigned deleters_owed;   /* memory handed over with a deleter */
	unsigned deleter_calls;
	unsigned imports_owed;    /* DLPack tensors handed to an import */
	unsigned import_deletes;
	size_t call;
	const char *func;
};

void api_boundary_init(struct api_boundary *b, cow_allocator_t *capped);
/* One call chosen by the input. Aborts with a message on a violation. */
void api_boundary_call(struct api_boundary *b, struct fuzz_input *in);
/* Release everything and check that every deleter ran exactly once. */
void api_boundary_fini(struct api_boundary *b);

/* A deleter of malloc'd memory: frees @data and counts the call in the
 * unsigned @ctx points to (fuzz_api's storages use it too). */
void api_count_deleter(void *data, size_t nbytes, void *ctx);

#endif
