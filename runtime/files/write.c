/*
 * write.c - saving a snapshot as a safetensors file: the header, a
 * temporary file beside the destination written by a snapshot save,
 * synced and renamed over it, the directory synced (docs/files.md).
 */
#define _DEFAULT_SOURCE /* pwrite, posix_fallocate */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/allocator.h"
#include "core/atomic.h"
#include "core/error.h"
#include "core/fault.h"
#include "files/json.h"
#include "files/safetensors.h"
#include "snapshot/snapshot.h"

struct st_save {
	struct cow__snap_save *save;
	char *path, *dir, *tmp;      /* owned */
	size_t path_bytes, dir_bytes, tmp_bytes;
	int fd;
	bool tmp_made;               /* the temporary file exists */
	struct cow__jbuf header;     /* the 8-byte length and the JSON */
};

/* Unique names for temporary files. Synchronization: atomic. */
static cow__atomic_u64_t tmp_counter;

static char *
dup_string(const char *s, size_t *bytes)
{
	size_t n = strlen(s) + 1;
	char *p = cow__alloc(cow_allocator_default(), n);

	if (p != NULL)
		memcpy(p, s, n);
	else /* named so under cow_safetensors_save_start too */
		(void)cow__named(COW_ENOMEM, "cow_safetensors_save");
	*bytes = n;
	return p;
}

static void
st_free(struct st_save *w)
{
	cow_allocator_t *a = cow_allocator_default();

	cow__free(a, w->path, w->path_bytes);
	cow__free(a, w->dir, w->dir_bytes);
	cow__free(a, w->tmp, w->tmp_bytes);
	cow__jbuf_free(&w->header);
	cow__free(a, w, sizeof *w);
}

/* ------------------------------------------------------------------ */
/* The header. */

static cow_status_t
check_string(const char *s, const char *what, size_t i)
{
	size_t bad;

	if (!cow__utf8_valid(s, strlen(s), &bad))
		return cow__error(COW_EINVAL, "%s %zu is not valid UTF-8 "
		    "(byte %zu)", what, i, bad);
	return COW_OK;
}

/* A tensor's place in the file: descending element size, then name, so
 * that each starts aligned to its element size. */
struct st_key {
	size_t itemsize;
	const char *name;
	size_t index;
};

static int
by_layout(const void *a, const void *b)
{
	const struct st_key *x = a, *y = b;

	if (x->itemsize != y->itemsize)
		return x->itemsize > y->itemsize ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int
by_name_key(const void *a, const void *b)
{
	return strcmp(((const struct st_key *)a)->name,
	    ((const struct st_key *)b)->name);
}

/* The snapshot's tensors and @opts' metadata are writable in the format. */
static cow_status_t
check_save(const cow_snapshot_t *snap, const cow_safetensors_save_t *opts)
{
	size_t n = cow_snapshot_count(snap);
	cow_status_t st;

	for (size_t i = 0; i < n; i++) {
		const char *name = cow_snapshot_name(snap, i);

		if (cow__st_dtype_name(cow_snapshot_dtype(snap, i)) == NULL)
			return cow__error(COW_EINVAL, "tensor %zu "
			    "(\"%s\") is %s, which safetensors has no code for",
			    i, name, cow_dtype_name(cow_snapshot_dtype(snap, i)));
		if (name[0] == '\0' || strcmp(name, "__metadata__") == 0)
			return cow__error(COW_EINVAL, "tensor %zu is named "
			    "\"%s\", which a safetensors file cannot hold", i,
			    name);
		if ((st = check_string(name, "tensor name", i)) != COW_OK)
			return st;
	}
	if (opts == NULL)
		return COW_OK;
	if (opts->mode != COW_SNAPSHOT_STREAM &&
	    opts->mode != COW_SNAPSHOT_PERSIST_FIRST)
		return cow__error(COW_EINVAL, "unknown save mode %d",
		    (int)opts->mode);
	if (opts->metadata_count > 0 && (opts->metadata_keys == NULL ||
	    opts->metadata_values == NULL))
		return cow__error(COW_EINVAL, "metadata_%s is NULL for "
		    "%zu pairs", opts->metadata_keys == NULL ? "keys" :
		    "values", opts->metadata_count);
	for (size_t i = 0; i < opts->metadata_count; i++) {
		if (opts->metadata_keys[i] == NULL ||
		    opts->metadata_values[i] == NULL)
			return cow__error(COW_EINVAL, "metadata pair %zu "
			    "has a NULL string", i);
		if ((st = check_string(opts->metadata_keys[i], "metadata key",
		    i)) != COW_OK ||
		    (st = check_string(opts->metadata_values[i],
		    "metadata value", i)) != COW_OK)
			return st;
		for (size_t k = 0; k < i; k++)
			if (strcmp(opts->metadata_keys[k],
			    opts->metadata_keys[i]) == 0)
				return cow__error(COW_EINVAL, "duplicate "
				    "metadata key \"%s\"",
				    opts->metadata_keys[i]);
	}
	return COW_OK;
}

/* The file's order of the tensors in @order (checked: names unique), and
 * the header: its length, then the JSON padded to a multiple of 8. */
static cow_status_t
build_header(const cow_snapshot_t *snap, const cow_safetensors_save_t *opts,
    size_t *order, struct cow__jbuf *h)
{
	cow_allocator_t *a = cow_allocator_default();
	size_t n = cow_snapshot_count(snap);
	struct st_key *keys = NULL;
	uint64_t at = 0, len;
	bool first = true;
	cow_status_t st = COW_OK;

	if (n > 0 && (keys = cow__alloc(a, n * sizeof *keys)) == NULL)
		return COW_ENOMEM;
	for (size_t i = 0; i < n; i++)
		keys[i] = (struct st_key){
		    cow_dtype_size(cow_snapshot_dtype(snap, i)),
		    cow_snapshot_name(snap, i), i};
	if (n > 0)
		qsort(keys, n, sizeof *keys, by_name_key);
	for (size_t i = 1; i < n && st == COW_OK; i++)
		if (strcmp(keys[i - 1].name, keys[i].name) == 0)
			st = cow__error(COW_EINVAL, "two tensors are "
			    "named \"%s\"", keys[i].name);
	if (st != COW_OK) {
		cow__free(a, keys, n * sizeof *keys);
		return st;
	}
	if (n > 0)
		qsort(keys, n, sizeof *keys, by_layout);
	cow__jbuf_put(h, "\0\0\0\0\0\0\0\0", 8);
	cow__jbuf_puts(h, "{");
	if (opts != NULL && opts->metadata_count > 0) {
		cow__jbuf_puts(h, "\"__metadata__\":{");
		for (size_t i = 0; i < opts->metadata_count; i++) {
			if (i > 0)
				cow__jbuf_puts(h, ",");
			cow__jbuf_string(h, opts->metadata_keys[i]);
			cow__jbuf_puts(h, ":");
			cow__jbuf_string(h, opts->metadata_values[i]);
		}
		cow__jbuf_puts(h, "}");
		first = false;
	}
	for (size_t k = 0; k < n; k++) {
		size_t i = keys[k].index;
		const int64_t *sizes = cow_snapshot_sizes(snap, i);
		uint64_t nb = cow_snapshot_nbytes(snap, i);

		order[k] = i;
		cow__jbuf_puts(h, first ? "" : ",");
		first = false;
		cow__jbuf_string(h, keys[k].name);
		cow__jbuf_puts(h, ":{\"dtype\":\"");
		cow__jbuf_puts(h, cow__st_dtype_name(cow_snapshot_dtype(snap,
		    i)));
		cow__jbuf_puts(h, "\",\"shape\":[");
		for (int d = 0; d < cow_snapshot_ndim(snap, i); d++)
			cow__jbuf_printf(h, "%s%lld", d > 0 ? "," : "",
			    (long long)sizes[d]);
		cow__jbuf_printf(h, "],\"data_offsets\":[%llu,",
		    (unsigned long long)at);
		at += nb;
		cow__jbuf_printf(h, "%llu]}", (unsigned long long)at);
	}
	cow__jbuf_puts(h, "}");
	cow__free(a, keys, n * sizeof *keys);
	while (h->len % 8 != 0)
		cow__jbuf_puts(h, " ");
	if (h->failed)
		return cow__error(COW_ENOMEM, "no memory for the header");
	len = h->len - 8;
	for (int b = 0; b < 8; b++)
		h->data[b] = (char)(len >> (8 * b) & 0xff);
	return COW_OK;
}

/* ------------------------------------------------------------------ */
/* The temporary file. */

/* A failed write of the temporary file: the save's failure, naming the
 * call and the file (the first failure wins); the errno for the save. */
static int
write_failed(struct st_save *w, const char *call, int err)
{
	cow__snap_save_fail(w->save, COW_EIO, "%s(\"%s\"): %s", call, w->tmp,
	    strerror(err));
	return err;
}

/* The snapshot save's callbacks: the file at its place. */
static int
file_write(void *ctx, const void *data, size_t n)
{
	struct st_save *w = ctx;

	while (n > 0) {
		ssize_t r = COW__FAULT_POINT(file_write,
		    write(w->fd, data, n));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return write_failed(w, "write", r < 0 ? errno : EIO);
		data = (const char *)data + r;
		n -= (size_t)r;
	}
	return 0;
}

static int
file_pwrite(void *ctx, const void *data, size_t n, uint64_t off)
{
	struct st_save *w = ctx;

	while (n > 0) {
		ssize_t r = COW__FAULT_POINT(file_pwrite,
		    pwrite(w->fd, data, n, (off_t)off));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return write_failed(w, "pwrite", r < 0 ? errno : EIO);
		data = (const char *)data + r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* @w->path's directory ("." for a bare name). */
static bool
split_dir(struct st_save *w)
{
	const char *slash = strrchr(w->path, '/');
	size_t n = slash == NULL ? 1 : slash == w->path ? 1 :
	    (size_t)(slash - w->path);

	w->dir_bytes = n + 1;
	if ((w->dir = cow__alloc(cow_allocator_default(), w->dir_bytes)) ==
	    NULL) {
		(void)cow__named(COW_ENOMEM, "cow_safetensors_save");
		return false;
	}
	memcpy(w->dir, slash == NULL ? "." : w->path, n);
	w->dir[n] = '\0';
	return true;
}

static cow_status_t
fail_errno(struct st_save *w, const char *call, const char *what)
{
	int err = errno;

	return cow__snap_save_fail(w->save, COW_EIO, "%s(\"%s\"): %s", call,
	    what, strerror(err));
}

/* Create the temporary file beside the destination: ".NAME.cowstore-P-K"
 * (the creator's umask applies, as for any new file). */
static cow_status_t
create_tmp(struct st_save *w)
{
	const char *base = strrchr(w->path, '/');

	base = base == NULL ? w->path : base + 1;
	w->tmp_bytes = strlen(w->dir) + strlen(base) + 64;
	if ((w->tmp = cow__alloc(cow_allocator_default(),
	    w->tmp_bytes)) == NULL)
		return cow__snap_save_fail(w->save, COW_ENOMEM, "no memory "
		    "for the temporary file's name");
	for (int tries = 0; tries < 100; tries++) {
		snprintf(w->tmp, w->tmp_bytes, "%s/.%s.cowstore-%ld-%llu",
		    w->dir, base, (long)getpid(), (unsigned long long)
		    cow__atomic_fetch_add_relaxed(&tmp_counter, 1));
		w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0666);
		if (w->fd >= 0 || errno != EEXIST)
			break;
	}
	w->tmp_made = w->fd >= 0;
	if (w->fd < 0) {
		int err = errno;

		return cow__snap_save_fail(w->save, COW_EIO, "cannot create a "
		    "temporary file in \"%s\": %s", w->dir, strerror(err));
	}
	return COW_OK;
}

/* Sync the file, rename it over the destination, sync the directory. */
static cow_status_t
commit_tmp(struct st_save *w)
{
	int dfd, fd = w->fd;

	w->fd = -1;
	if (COW__FAULT_POINT(file_sync, fsync(fd)) != 0) {
		fail_errno(w, "fsync", w->tmp);
		close(fd);
		return COW_EIO;
	}
	if (close(fd) != 0)
		return fail_errno(w, "close", w->tmp);
	if (rename(w->tmp, w->path) != 0)
		return fail_errno(w, "rename", w->path);
	if ((dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return fail_errno(w, "open", w->dir);
	if (fsync(dfd) != 0 && errno != EINVAL) {
		/* The file is in place; only its directory entry's
		 * durability is in doubt. */
		fail_errno(w, "fsync", w->dir);
		close(dfd);
		return COW_EIO;
	}
	close(dfd);
	return COW_OK;
}

/* The temporary file, its space reserved (persist first), the header
 * written: on the caller's thread, so that writers persist into the file
 * as soon as the save returns or starts (cow__snap_save_publish). A
 * failure is the save's (cow__snap_save_fail). */
static void
st_prepare(struct st_save *w)
{
	uint64_t total = w->header.len;
	cow_snapshot_t *snap = cow__snap_save_snapshot(w->save);
	int err;

	for (size_t i = 0; i < cow_snapshot_count(snap); i++)
		total += cow_snapshot_nbytes(snap, i);
	if (create_tmp(w) != COW_OK)
		return;
	if (cow__snap_save_persist_first(w->save) &&
	    (err = posix_fallocate(w->fd, 0, (off_t)total)) != 0 &&
	    err != EOPNOTSUPP && err != EINVAL)
		cow__snap_save_fail(w->save, COW_EIO, "posix_fallocate(\"%s\", "
		    "%llu bytes): %s", w->tmp, (unsigned long long)total,
		    strerror(err));
	else if (file_pwrite(w, w->header.data, w->header.len, 0) != 0)
		; /* the failure is the save's (write_failed) */
	else if (lseek(w->fd, (off_t)w->header.len, SEEK_SET) < 0)
		fail_errno(w, "lseek", w->tmp);
	else
		cow__snap_save_publish(w->save);
}

/* The save (if the file is ready), then the rename or the removal of the
 * temporary file, then the save's end. Runs on the caller's thread or a
 * job's. */
static cow_status_t
st_run(struct st_save *w, char *message, size_t n)
{
	cow_status_t st;
	bool committed = false;

	if (cow__snap_save_status(w->save) == COW_OK)
		cow__snap_save_run(w->save);
	if (cow__snap_save_status(w->save) == COW_OK &&
	    commit_tmp(w) == COW_OK)
		committed = true;
	if (w->fd >= 0)
		close(w->fd);
	if (!committed && w->tmp_made)
		unlink(w->tmp);
	st = cow__snap_save_end(w->save, message, n);
	st_free(w);
	return st;
}

static cow_status_t
st_task(void *arg, char *message, size_t n)
{
	return st_run(arg, message, n);
}

/* The checks, the header and the snapshot save's beginning. */
static cow_status_t
st_begin(cow_snapshot_t *snap, const char *path,
    const cow_safetensors_save_t *opts, struct st_save **out)
{
	cow_allocator_t *a = cow_allocator_default();
	size_t n, *order = NULL;
	struct st_save *w;
	cow_snapshot_save_t how = {0};
	cow_status_t st;

	COW__RETURN_IF_NULL(snap);
	COW__RETURN_IF_NULL(path);
	if ((st = check_save(snap, opts)) != COW_OK)
		return st;
	n = cow_snapshot_count(snap);
	if ((w = cow__alloc(a, sizeof *w)) == NULL)
		return COW_ENOMEM;
	memset(w, 0, sizeof *w);
	w->fd = -1;
	if ((w->path = dup_string(path, &w->path_bytes)) == NULL ||
	    !split_dir(w) ||
	    (n > 0 && (order = cow__alloc(a, n * sizeof *order)) ==
	    NULL)) {
		st_free(w);
		return COW_ENOMEM;
	}
	if ((st = build_header(snap, opts, order, &w->header)) ==
	    COW_OK) {
		how.mode = opts != NULL ? opts->mode : COW_SNAPSHOT_STREAM;
		how.write = file_write;
		how.pwrite = file_pwrite;
		how.ctx = w;
		how.base_offset = w->header.len;
		how.order = order;
		if (opts != NULL) {
			how.progress = opts->progress;
			how.progress_ctx = opts->progress_ctx;
			how.keep = opts->keep;
		}
		st = cow__snap_save_begin(snap, &how, &w->save);
	}
	cow__free(a, order, n * sizeof *order);
	if (st != COW_OK) {
		st_free(w);
		return st;
	}
	*out = w;
	return COW_OK;
}

cow_status_t
cow_safetensors_save(cow_snapshot_t *snap, const char *path,
    const cow_safetensors_save_t *opts)
{
	char message[256];
	struct st_save *w;
	cow_status_t st;

	if ((st = st_begin(snap, path, opts, &w)) != COW_OK)
		return COW__NAMED(st);
	st_prepare(w);
	if ((st = st_run(w, message, sizeof message)) != COW_OK)
		return COW__NAMED(cow__error(st, "%s", message));
	return COW_OK;
}

cow_status_t
cow_safetensors_save_start(cow_snapshot_t *snap, const char *path,
    const cow_safetensors_save_t *opts, cow_snapshot_job_t **out)
{
	struct cow_snapshot_job *job;
	struct st_save *w;
	cow_status_t st;

	COW__RETURN_IF_NULL(out);
	if ((st = cow__job_new(opts != NULL ? opts->progress : NULL,
	    opts != NULL ? opts->progress_ctx : NULL, 0, &job)) !=
	    COW_OK)
		return COW__NAMED(st);
	if ((st = st_begin(snap, path, opts, &w)) != COW_OK) {
		cow__job_discard(job);
		return COW__NAMED(st);
	}
	cow__snap_save_attach(w->save, job);
	st_prepare(w);
	if (cow__snap_save_status(w->save) != COW_OK) {
		/* The file could not be made: say so now. */
		char message[256];

		st = st_run(w, message, sizeof message);
		cow__job_discard(job);
		return COW__NAMED(cow__error(st, "%s", message));
	}
	if ((st = cow__job_run(job, st_task, w)) != COW_OK) {
		char message[256];

		cow__snap_save_fail(w->save, COW_ENOMEM, "no thread for the "
		    "save");
		st_run(w, message, sizeof message);
		cow__job_discard(job);
		return COW__NAMED(st);
	}
	*out = job;
	return COW_OK;
}
