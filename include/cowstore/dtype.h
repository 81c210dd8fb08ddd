/*
 * cowstore element types: the dtypes of tensors and their sizes and names.
 *
 * Errors follow common.h.
 */
#ifndef COWSTORE_DTYPE_H
#define COWSTORE_DTYPE_H

#include <stddef.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Element types. Booleans take one byte holding 0 or 1 (any non-zero byte
 * read from external data counts as true).
 */
typedef enum cow_dtype {
	COW_DTYPE_BOOL = 0,
	COW_DTYPE_UINT8 = 1,
	COW_DTYPE_INT32 = 2,
	COW_DTYPE_INT64 = 3,
	COW_DTYPE_FLOAT32 = 4,
	COW_DTYPE_FLOAT64 = 5
} cow_dtype_t;

#define COW_DTYPE_COUNT 6

/**
 * cow_dtype_size - bytes per element of @dtype. Thread-safety: any thread.
 * Errors: none; an unknown value gives 0.
 */
COW_API size_t cow_dtype_size(cow_dtype_t dtype);

/**
 * cow_dtype_name - "bool", "uint8", "int32", "int64", "float32", "float64".
 * Ownership: static string; never free it. Thread-safety: any thread.
 * Errors: none; an unknown value gives "unknown".
 */
COW_API const char *cow_dtype_name(cow_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif
