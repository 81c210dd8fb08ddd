/*
 * buffer.h - one owned data allocation and how to give it back.
 */
#ifndef COW_STORAGE_BUFFER_H
#define COW_STORAGE_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

#include <cowstore/alloc.h>
#include <cowstore/storage.h>

typedef struct cow__buffer {
	void *data;
	size_t nbytes;
	cow_deleter_fn deleter; /* NULL: not owned (the caller keeps it) */
	void *deleter_ctx;
} cow__buffer_t;

/* A buffer of @nbytes from @alloc, owned through the allocator. Returns
 * COW_ENOMEM (message naming @func) on failure. nbytes 0 gives no data. */
cow_status_t cow__buffer_alloc(cow_allocator_t *alloc, size_t nbytes,
    cow__buffer_t *out, const char *func);

/* The same, zero-filled (the allocator's zeroed path: fresh pages are not
 * touched). */
cow_status_t cow__buffer_alloc_zeroed(cow_allocator_t *alloc, size_t nbytes,
    cow__buffer_t *out, const char *func);

/* Give the data back to its owner (deleter), once. */
void cow__buffer_free(cow__buffer_t *buf);

#endif
