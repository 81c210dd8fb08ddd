/*
 * dl_dtype.h - dlpack.h's table of DLPack types, as the fuzz targets read
 * it from the header: each dtype's (code, bits), by the dtype's name, so
 * that the library's own table (runtime/interop/dlpack.c) is checked
 * against an independent one.
 */
#ifndef COW_FUZZ_DL_DTYPE_H
#define COW_FUZZ_DL_DTYPE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <cowstore/dtype.h>

#include "interop/dlpack_abi.h"

/* (code, bits) of @d; false for an unknown dtype. */
static inline bool
dl_of(cow_dtype_t d, uint8_t *code, uint8_t *bits)
{
	size_t size = cow_dtype_size(d);
	const char *name = cow_dtype_name(d);

	if (size == 0)
		return false;
	*bits = (uint8_t)(8 * size);
	if (strcmp(name, "bool") == 0)
		*code = COW__DL_BOOL;
	else if (strncmp(name, "uint", 4) == 0)
		*code = COW__DL_UINT;
	else if (strncmp(name, "int", 3) == 0)
		*code = COW__DL_INT;
	else if (strncmp(name, "bfloat", 6) == 0)
		*code = COW__DL_BFLOAT;
	else if (strncmp(name, "float", 5) == 0)
		*code = COW__DL_FLOAT;
	else if (strncmp(name, "complex", 7) == 0)
		*code = COW__DL_COMPLEX;
	else
		return false;
	return true;
}

#endif
