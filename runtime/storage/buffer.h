/*
 * buffer.h - one data allocation, who owns it, whether the library may write
 * it, and how to give it back.
 *
 * Ownership (storage.h), kept in @access: a buffer is owned by the storages
 * that share it (the library's own allocations, and external memory handed
 * over with a deleter), and the last of them may steal it; external memory
 * without a deleter is borrowed: its owner keeps it, and only the storage
 * the caller created over it (the home storage, COW__STORAGE_HOME) may
 * write it; read-only memory is never written by anyone.
 */
#ifndef COW_STORAGE_BUFFER_H
#define COW_STORAGE_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

#include <cowstore/alloc.h>
#include <cowstore/storage.h>

/* Who may write a buffer's memory. */
enum cow__buffer_access {
	COW__BUFFER_OWNED = 0,  /* whoever holds it privately (a steal) */
	COW__BUFFER_BORROWED,   /* only its home storage */
	COW__BUFFER_READ_ONLY   /* nobody */
};

typedef struct cow__buffer {
	void *data;
	size_t nbytes;
	cow_deleter_fn deleter; /* NULL: nothing to call when it goes */
	void *deleter_ctx;
	unsigned char access;   /* enum cow__buffer_access */
} cow__buffer_t;

/* May a storage write @buf in place (and so take it over from a COW
 * context)? Owned memory: yes; borrowed memory: only when @home (the
 * storage the caller created over it); read-only memory: never. One
 * compare in the usual (owned) case. */
static inline bool
cow__buffer_may_write(const cow__buffer_t *buf, bool home)
{
	return buf->access == COW__BUFFER_OWNED ||
	    (buf->access == COW__BUFFER_BORROWED && home);
}

/* A buffer of @nbytes from @alloc, owned through the allocator. Returns
 * COW_ENOMEM on failure. nbytes 0 gives no data. */
cow_status_t cow__buffer_alloc(cow_allocator_t *alloc, size_t nbytes,
    cow__buffer_t *out);

/* The same, zero-filled (the allocator's zeroed path: fresh pages are not
 * touched). */
cow_status_t cow__buffer_alloc_zeroed(cow_allocator_t *alloc, size_t nbytes,
    cow__buffer_t *out);

/* Give the data back to its owner (deleter), once. */
void cow__buffer_free(cow__buffer_t *buf);

#endif
