/*
 * safetensors_ref.h - the reference validator fuzz_safetensors checks
 * cow_safetensors_open against. Written from the format's specification
 * (the safetensors README and docs/files.md's list of rules), not from
 * runtime/files/: its own UTF-8 check, its own strict RFC 8259 JSON
 * reader, its own rules.
 *
 * Where cowstore means to differ from the format, the validator follows
 * cowstore, and says so (safetensors_ref.c, "Intended divergences").
 */
#ifndef COW_FUZZ_SAFETENSORS_REF_H
#define COW_FUZZ_SAFETENSORS_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reasons a file is refused, one per rule (stref_rule_name). */
enum stref_rule {
	STREF_VALID,
	STREF_FILE_TOO_SHORT,    /* under 8 bytes */
	STREF_HEADER_TOO_LARGE,  /* N above 100,000,000 */
	STREF_HEADER_PAST_END,   /* 8 + N beyond the file */
	STREF_UTF8,              /* the header is not UTF-8 */
	STREF_JSON,              /* the header is not JSON (RFC 8259) */
	STREF_NOT_OBJECT,        /* the header is JSON but not an object */
	STREF_NUL,               /* \u0000 in a name or metadata (cowstore) */
	STREF_DEPTH,             /* an ignored value nested too deep */
	STREF_ENTRY,             /* a tensor's entry is not an object with
	                            one dtype, shape and data_offsets each */
	STREF_DTYPE,             /* an unknown dtype (or one cowstore lacks) */
	STREF_NDIM,              /* more than 16 dimensions (cowstore) */
	STREF_SHAPE,             /* not a list of non-negative integers that
	                            fit in int64 */
	STREF_OVERFLOW,          /* element count x element size > 2^64 - 1 */
	STREF_OFFSETS,           /* data_offsets not two non-negative integers */
	STREF_END_BEFORE_BEGIN,  /* data_offsets end < begin */
	STREF_EXTENT,            /* end - begin != element count x size */
	STREF_DUPLICATE_NAME,    /* two tensors of one name */
	STREF_COVERAGE,          /* sorted by offset, a gap or an overlap, or
	                            a tensor past the end of the file */
	STREF_TRAILING,          /* bytes after the last tensor */
	STREF_METADATA,          /* __metadata__ not an object of strings */
	STREF_METADATA_DUPLICATE,/* a metadata key twice, or __metadata__
	                            twice */
	STREF_RULE_COUNT
};

#define STREF_MAX_NDIM 16

struct stref_tensor {
	char *name;          /* UTF-8, NUL-terminated (no NUL inside) */
	int dtype;           /* a cow_dtype_t */
	unsigned elem_size;  /* bytes per element */
	int ndim;
	int64_t sizes[STREF_MAX_NDIM];
	uint64_t begin, end; /* data_offsets, relative to the data */
};

struct stref_meta {
	char *key, *value;
};

struct stref_file {
	enum stref_rule rule; /* STREF_VALID or why the file is refused */
	char why[200];        /* the rule and the values, for messages */
	/* Only when valid (rule == STREF_VALID): */
	uint64_t data_start;  /* 8 + N: the file offset of the data */
	size_t ntensors;      /* in the header's order */
	struct stref_tensor *tensors;
	size_t nmeta;         /* in the header's order */
	struct stref_meta *meta;
};

/*
 * stref_check - judge the @size bytes at @file as a safetensors file into
 * *out (stref_free it afterwards, valid or not). Returns 0, or -1 when it
 * ran out of memory (then *out judges nothing and holds nothing).
 */
int stref_check(const uint8_t *file, size_t size, struct stref_file *out);
void stref_free(struct stref_file *f);

/* The rule's short name ("trailing"), as in the corpus's file names. */
const char *stref_rule_name(enum stref_rule rule);

#endif
