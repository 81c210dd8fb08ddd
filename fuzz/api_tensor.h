/*
 * api_tensor.h - the tensor part of fuzz_api (api_tensor.c): random
 * arguments to every public function of tensor.h, ops.h and maybe_owned.h.
 */
#ifndef COW_FUZZ_API_TENSOR_H
#define COW_FUZZ_API_TENSOR_H

#include <stddef.h>

#include <cowstore/cowstore.h>

#include "fuzz_input.h"

#define API_TENSORS 4

struct api_tensor {
	cow_tensor_t *pool[API_TENSORS];
	cow_storage_t *storage;   /* for cow_tensor_from_storage */
	cow_allocator_t *capped;  /* refuses large allocations */
	size_t call;
	const char *func;
};

/* @capped: an allocator that fails allocations above a small cap (huge
 * shapes go there, never to the system allocator). */
void api_tensor_init(struct api_tensor *s, cow_allocator_t *capped);
/* One call chosen by the input. Aborts with a message on a violation. */
void api_tensor_call(struct api_tensor *s, struct fuzz_input *in);
/* Release everything; the caller then checks the allocators. */
void api_tensor_fini(struct api_tensor *s);

#endif
