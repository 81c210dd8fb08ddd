/*
 * cowstore safetensors files: snapshots saved as safetensors files in the
 * background, and files loaded with no copy (docs/files.md).
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N; N bytes of UTF-8 JSON mapping each tensor's name to {"dtype",
 * "shape", "data_offsets": [begin, end]} (offsets into the byte buffer
 * after the header, end exclusive), with an optional "__metadata__" object
 * of strings; then the tensors' bytes, little-endian, row-major.
 *
 * dtypes: BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64
 * and C64 (cowstore's COW_DTYPE_COMPLEX64). The format has no complex128:
 * a snapshot holding one is refused, naming the tensor.
 */
#ifndef COWSTORE_SAFETENSORS_H
#define COWSTORE_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "dtype.h"
#include "snapshot.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Saving. */

typedef struct cow_safetensors_save_s {
	/* COW_SNAPSHOT_STREAM (the default) or COW_SNAPSHOT_PERSIST_FIRST
	 * (snapshot.h: writers persist what they reach first, at its offset
	 * in the file). */
	cow_snapshot_save_mode_t mode;
	/* "__metadata__": @metadata_count pairs of UTF-8 strings. */
	size_t metadata_count;
	const char *const *metadata_keys;
	const char *const *metadata_values;
	/* Bytes of tensor data written so far and in all. May be NULL. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* Keep every tensor held after it is written, so that a failed save
	 * can be retried in full (writers then copy what they write during
	 * the save); by default each storage is released once written. */
	bool keep;
} cow_safetensors_save_t;

/**
 * cow_safetensors_save - write @snap to the safetensors file @path, on the
 * calling thread: a temporary file in @path's directory, written, synced,
 * renamed over @path, and the directory synced, so @path is either the old
 * file or the whole new one (a reader that mapped the old one keeps it).
 * The tensors are laid out by descending element size (then by name), so
 * each starts aligned to its element size; the header is padded with
 * spaces to a multiple of 8. Each storage of the snapshot is released as
 * soon as its tensors are written (snapshot.h).
 * @opts may be NULL: a stream save with no metadata.
 * Thread-safety: a save of @snap (one per snapshot at a time); writers of
 * the snapshot's tensors need nothing.
 * Errors: COW_EINVAL (NULL, a name that is empty, duplicate or
 * "__metadata__", a string that is not UTF-8, complex128), COW_EBUSY (a
 * save runs on @snap), COW_ERELEASED (a tensor was released), COW_EIO (the
 * file system: a missing directory, no permission, no space, an I/O
 * error; the message names the call and the errno), COW_ECANCELED,
 * COW_ENOMEM. On failure the temporary file is removed, @path is as it was
 * and the snapshot stays usable: its unwritten tensors held (all of them
 * with @opts->keep), the written ones released. A read-only file at @path
 * is replaced like any other (the rename needs only the directory).
 */
COW_API cow_status_t cow_safetensors_save(cow_snapshot_t *snap,
    const char *path, const cow_safetensors_save_t *opts);

/**
 * cow_safetensors_save_start - cow_safetensors_save on a thread of the
 * library's: the temporary file is made and its header written on the
 * calling thread (in a persist-first save, writers persist into it from
 * the moment this returns); the rest runs on the job's thread (snapshot.h:
 * progress, done, wait, cancel, release).
 * Ownership: the job holds a reference on @snap and copies @path and
 * @opts; *out is the caller's (cow_snapshot_job_release).
 * Thread-safety: as cow_safetensors_save.
 * Errors: those cow_safetensors_save finds before it writes the tensors
 * (COW_EINVAL, COW_EBUSY, COW_ERELEASED, COW_EIO for the temporary file,
 * COW_ENOMEM); the rest through cow_snapshot_job_wait.
 */
COW_API cow_status_t cow_safetensors_save_start(cow_snapshot_t *snap,
    const char *path, const cow_safetensors_save_t *opts,
    cow_snapshot_job_t **out);

/* ------------------------------------------------------------------ */
/* Loading. */

typedef struct cow_safetensors cow_safetensors_t;

/* cow_safetensors_open flags. */
enum {
	/* Read each tensor with pread(2) into a buffer of its own when it is
	 * asked for, instead of mapping the file: for file systems where a
	 * mapping is unsafe (a file truncated under a mapping makes reads of
	 * the lost pages fault, docs/files.md). */
	COW_SAFETENSORS_PREAD = 1u << 0
};

/**
 * cow_safetensors_open - open the safetensors file @path and check it
 * against every rule of the format (docs/files.md lists them, and the
 * files.reject.* tests of tests/files/st_interop.py break each; each
 * failure names the rule, the tensor and the values). By default the file
 * is mapped read-only, and the mapping lives until the handle and every
 * tensor taken from it (and their lazy clones) are released, on any thread.
 * Ownership: *out is the caller's (cow_safetensors_close).
 * Thread-safety: any thread.
 * Errors: COW_EINVAL (NULL, an unknown flag), COW_EIO (open, fstat, mmap or
 * read failed; the message names the call and the errno), COW_EFORMAT
 * (the file breaks a rule of the format), COW_ENOMEM.
 */
COW_API cow_status_t cow_safetensors_open(const char *path, unsigned flags,
    cow_safetensors_t **out);

/**
 * cow_safetensors_close - release the handle. Tensors taken from it stay
 * valid; the mapping goes with the last of them.
 * Ownership: the caller's handle is gone. Thread-safety: once per handle,
 * from any thread; not concurrently with other calls on it.
 * Errors: none; NULL does nothing.
 */
COW_API void cow_safetensors_close(cow_safetensors_t *file);

/**
 * cow_safetensors_count, _name, _dtype, _ndim, _sizes, _nbytes - the file's
 * tensors, in the header's order: tensor @i's name, dtype, shape and
 * bytes.
 * Ownership: the strings and arrays belong to the handle (valid until
 * cow_safetensors_close). Thread-safety: any thread.
 * Errors: none; an @i out of range gives NULL, COW_DTYPE_INVALID, -1 or 0.
 */
COW_API size_t cow_safetensors_count(const cow_safetensors_t *file);
COW_API const char *cow_safetensors_name(const cow_safetensors_t *file,
    size_t i);
COW_API cow_dtype_t cow_safetensors_dtype(const cow_safetensors_t *file,
    size_t i);
COW_API int cow_safetensors_ndim(const cow_safetensors_t *file, size_t i);
COW_API const int64_t *cow_safetensors_sizes(const cow_safetensors_t *file,
    size_t i);
COW_API uint64_t cow_safetensors_nbytes(const cow_safetensors_t *file,
    size_t i);

/**
 * cow_safetensors_find - the index of the tensor named @name.
 * Thread-safety: any thread.
 * Errors: COW_EINVAL (NULL), COW_ERANGE (no such tensor).
 */
COW_API cow_status_t cow_safetensors_find(const cow_safetensors_t *file,
    const char *name, size_t *index);

/**
 * cow_safetensors_metadata_count, _key, _value - the "__metadata__" pairs
 * in the header's order; cow_safetensors_metadata_get - the value of @key,
 * or NULL.
 * Ownership: the strings belong to the handle. Thread-safety: any thread.
 * Errors: none; out of range or NULL gives NULL (count: 0).
 */
COW_API size_t cow_safetensors_metadata_count(const cow_safetensors_t *file);
COW_API const char *cow_safetensors_metadata_key(
    const cow_safetensors_t *file, size_t i);
COW_API const char *cow_safetensors_metadata_value(
    const cow_safetensors_t *file, size_t i);
COW_API const char *cow_safetensors_metadata_get(
    const cow_safetensors_t *file, const char *key);

/**
 * cow_safetensors_get - tensor @i as a contiguous tensor on a storage of
 * its own. Mapped: read-only external memory over the mapping (reads copy
 * nothing; the first write copies this tensor alone, never its neighbours;
 * lazy clones share it). A tensor whose bytes are not aligned to its element
 * size (half of it for C64, two float32) in the mapping is copied into
 * aligned memory instead (counted: cow_safetensors_stats).
 * COW_SAFETENSORS_PREAD: read into a private buffer of its own.
 * Ownership: *out holds one reference; it keeps the mapping alive.
 * Thread-safety: any thread, concurrently with other gets.
 * Errors: COW_EINVAL (NULL), COW_ERANGE (@i), COW_EIO (pread failed),
 * COW_ENOMEM.
 */
COW_API cow_status_t cow_safetensors_get(cow_safetensors_t *file, size_t i,
    cow_tensor_t **out);

typedef struct cow_safetensors_stats_s {
	uint64_t tensors;          /* tensors taken with cow_safetensors_get */
	uint64_t unaligned_copies; /* of them, copied for their alignment */
	uint64_t bytes_read;       /* bytes read with pread (or copied) */
	uint64_t mapped_bytes;     /* the mapping's length (0: pread) */
} cow_safetensors_stats_t;

/**
 * cow_safetensors_stats - the handle's counters into *out.
 * Thread-safety: any thread. Errors: none; NULL does nothing.
 */
COW_API void cow_safetensors_stats(const cow_safetensors_t *file,
    cow_safetensors_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
