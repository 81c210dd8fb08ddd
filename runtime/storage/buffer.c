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

static cow_status_t
buffer_alloc(cow_allocator_t *alloc, size_t nbytes, bool zeroed,
    cow__buffer_t *out)
{
	void *p = NULL;

	if (nbytes > 0) {
		p = zeroed ? cow__alloc_zeroed(alloc, nbytes) :
		    cow__alloc(alloc, nbytes);
		if (p == NULL)
			return COW_ENOMEM;
	}
	out->data = p;
	out->nbytes = nbytes;
	out->deleter = p != NULL ? allocator_deleter : NULL;
	out->deleter_ctx = alloc;
	out->access = COW__BUFFER_OWNED;
	return COW_OK;
}

cow_status_t
cow__buffer_alloc(cow_allocator_t *alloc, size_t nbytes, cow__buffer_t *out)
{
	return buffer_alloc(alloc, nbytes, false, out);
}

cow_status_t
cow__buffer_alloc_zeroed(cow_allocator_t *alloc, size_t nbytes,
    cow__buffer_t *out)
{
	return buffer_alloc(alloc, nbytes, true, out);
}

void
cow__buffer_free(cow__buffer_t *buf)
{
	if (buf->deleter != NULL) {
		COW__SCHED_ACCESS(buf->data, buf->nbytes, 1); /* the free */
		buf->deleter(buf->data, buf->nbytes, buf->deleter_ctx);
	}
	buf->deleter = NULL;
	buf->data = NULL;
}
