/*
 * buffer.c - owned data allocations: allocator-backed or external.
 */
#include "alloc/allocator.h"
#include "storage/buffer.h"

static void
allocator_deleter(void *data, size_t nbytes, void *ctx)
{
	cow__free(ctx, data, nbytes);
}

cow_status_t
cow__buffer_alloc(cow_allocator_t *alloc, size_t nbytes, cow__buffer_t *out,
    const char *func)
{
	void *p = NULL;

	if (nbytes > 0) {
		p = cow__alloc(alloc, nbytes, func);
		if (p == NULL)
			return COW_ENOMEM;
	}
	out->data = p;
	out->nbytes = nbytes;
	out->deleter = p != NULL ? allocator_deleter : NULL;
	out->deleter_ctx = alloc;
	return COW_OK;
}

void
cow__buffer_free(cow__buffer_t *buf)
{
	if (buf->deleter != NULL)
		buf->deleter(buf->data, buf->nbytes, buf->deleter_ctx);
	buf->deleter = NULL;
	buf->data = NULL;
}
