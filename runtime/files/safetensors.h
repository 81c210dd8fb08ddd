/*
 * safetensors.h - what the safetensors reader and writer share
 * (include/cowstore/safetensors.h, docs/files.md).
 */
#ifndef COW_FILES_SAFETENSORS_H
#define COW_FILES_SAFETENSORS_H

#include <cowstore/safetensors.h>

/* The reference reader's bound on the header's length. */
#define COW__ST_MAX_HEADER UINT64_C(100000000)

/* The format's name of @dtype, or NULL when the format has none. */
const char *cow__st_dtype_name(cow_dtype_t dtype);

/* The dtype named @name: 0 and *out; 1 when the format knows the name but
 * cowstore has no such dtype (8-, 6- and 4-bit floats); -1 when the format
 * does not know it. */
int cow__st_dtype_parse(const char *name, cow_dtype_t *out);

#endif
