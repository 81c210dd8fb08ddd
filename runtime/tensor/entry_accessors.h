/*
 * entry_accessors.h - the per-tensor accessors of a container of tensors
 * read by index (a safetensors file, a snapshot): name, dtype, ndim, sizes
 * and nbytes of entry i, with the "none" value where there is no entry.
 */
#ifndef COW_TENSOR_ENTRY_ACCESSORS_H
#define COW_TENSOR_ENTRY_ACCESSORS_H

#include <cowstore/dtype.h>

/* One accessor: @fn(c, i) is @entry_at(c, i)->@field, @none where
 * @entry_at (NULL container or index out of range) gives NULL. */
#define COW__ENTRY_ACCESSOR(type, fn, container_t, entry_t, entry_at,     \
    field, none)                                                        \
	type                                                                \
	fn(const container_t *c, size_t i)                                  \
	{                                                                   \
		const entry_t *e = entry_at(c, i);                          \
		return e != NULL ? e->field : (none);                       \
	}

/* The five public accessors, named in full, of @container_t's entries of
 * type @entry_t (fields name, dtype, ndim, sizes, nbytes). */
#define COW__ENTRY_ACCESSORS(container_t, entry_t, entry_at, name_fn,     \
    dtype_fn, ndim_fn, sizes_fn, nbytes_fn)                             \
	COW__ENTRY_ACCESSOR(const char *, name_fn, container_t, entry_t,    \
	    entry_at, name, NULL)                                           \
	COW__ENTRY_ACCESSOR(cow_dtype_t, dtype_fn, container_t, entry_t,    \
	    entry_at, dtype, COW_DTYPE_INVALID)                             \
	COW__ENTRY_ACCESSOR(int, ndim_fn, container_t, entry_t, entry_at,   \
	    ndim, -1)                                                       \
	COW__ENTRY_ACCESSOR(const int64_t *, sizes_fn, container_t,         \
	    entry_t, entry_at, sizes, NULL)                                 \
	COW__ENTRY_ACCESSOR(uint64_t, nbytes_fn, container_t, entry_t,      \
	    entry_at, nbytes, 0)

#endif
