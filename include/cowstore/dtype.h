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
 * Element types, those of NumPy and PyTorch. The values are part of the ABI
 * (DLPack codes are mapped from them): new ones are appended.
 * - Booleans take one byte holding 0 or 1 (any non-zero byte read from
 *   external data counts as true).
 * - Integers are two's complement (signed) or binary (unsigned), in the
 *   host's byte order.
 * - float16 is IEEE binary16; bfloat16 is the top 16 bits of IEEE binary32
 *   (8 exponent bits, 7 fraction bits); float32 and float64 are binary32
 *   and binary64.
 * - complex64 and complex128 are two float32 or two float64, the real part
 *   first (C's float _Complex and double _Complex layout).
 */
typedef enum cow_dtype {
	/* Not a dtype: what cow_tensor_dtype() gives for NULL. Outside the
	 * valid range [0, COW_DTYPE_COUNT) for good (new dtypes are appended
	 * above), so it is never a tensor's dtype; every function that takes
	 * a dtype refuses it as an unknown one. */
	COW_DTYPE_INVALID = -1,
	COW_DTYPE_BOOL = 0,
	COW_DTYPE_UINT8 = 1,
	COW_DTYPE_INT32 = 2,
	COW_DTYPE_INT64 = 3,
	COW_DTYPE_FLOAT32 = 4,
	COW_DTYPE_FLOAT64 = 5,
	COW_DTYPE_INT8 = 6,
	COW_DTYPE_INT16 = 7,
	COW_DTYPE_UINT16 = 8,
	COW_DTYPE_UINT32 = 9,
	COW_DTYPE_UINT64 = 10,
	COW_DTYPE_FLOAT16 = 11,
	COW_DTYPE_BFLOAT16 = 12,
	COW_DTYPE_COMPLEX64 = 13,
	COW_DTYPE_COMPLEX128 = 14
} cow_dtype_t;

/* The number of dtypes: the valid ones are 0 .. COW_DTYPE_COUNT - 1. */
#define COW_DTYPE_COUNT 15

/**
 * cow_dtype_size - bytes per element of @dtype: 1 (bool, int8, uint8), 2
 * (int16, uint16, float16, bfloat16), 4 (int32, uint32, float32), 8 (int64,
 * uint64, float64, complex64) or 16 (complex128). Thread-safety: any thread.
 * Errors: none; COW_DTYPE_INVALID and any other unknown value give 0.
 */
COW_API size_t cow_dtype_size(cow_dtype_t dtype);

/**
 * cow_dtype_name - the NumPy name: "bool", "uint8", "int32", "int64",
 * "float32", "float64", "int8", "int16", "uint16", "uint32", "uint64",
 * "float16", "bfloat16" (PyTorch's; NumPy has none), "complex64",
 * "complex128".
 * Ownership: static string; never free it. Thread-safety: any thread.
 * Errors: none; COW_DTYPE_INVALID and any other unknown value give
 * "unknown".
 */
COW_API const char *cow_dtype_name(cow_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif
