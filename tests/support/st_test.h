/*
 * st_test.h - helpers the safetensors tests share (tests/unit/
 * test_safetensors.c, tests/threads/test_safetensors_threads.c,
 * tests/files/st_tool.c): a scratch directory, whole-file reads, the
 * mappings of a file as /proc/self/maps lists them, leftover temporary
 * files, a view's elements gathered in C order by the test itself (not
 * by the library), and a save on the caller's thread or as a job.
 *
 * The including file defines _DEFAULT_SOURCE (mkdtemp, realpath) before
 * any include.
 */
#ifndef COW_ST_TEST_H
#define COW_ST_TEST_H

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cowstore/cowstore.h>

/* A new directory under $TMPDIR (or /tmp), canonical; NULL on failure. */
static inline char *
st_test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[PATH_MAX], *dir;

	snprintf(tmpl, sizeof tmpl, "%s/cow-st-XXXXXX",
	    base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(tmpl) == NULL)
		return NULL;
	dir = realpath(tmpl, NULL);
	return dir;
}

/* Remove @dir and the plain files in it (the tests make no more). */
static inline void
st_test_rmdir(char *dir)
{
	DIR *d;
	struct dirent *e;
	char p[PATH_MAX];

	if (dir == NULL)
		return;
	if ((d = opendir(dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
	free(dir);
}

/* The whole of @path in a malloc'd buffer (*n bytes); NULL when it cannot
 * be read. */
static inline unsigned char *
st_test_read(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long len;

	*n = 0;
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)len + 1)) != NULL) {
		if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else {
			*n = (size_t)len;
		}
	}
	fclose(f);
	return buf;
}

/* Write @n bytes to @path (created or truncated); 0 or -1. */
static inline int
st_test_write(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (f == NULL)
		return -1;
	if (n > 0 && fwrite(data, 1, n, f) != n)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* How many mappings /proc/self/maps lists for the file at @path (the
 * pathname column, exactly; a replaced file's old mappings read
 * "PATH (deleted)" and count under @deleted). -1 if maps is unreadable. */
static inline int
st_test_mappings_of(const char *path, bool deleted)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 256], want[PATH_MAX + 16];
	int count = 0;

	if (f == NULL)
		return -1;
	snprintf(want, sizeof want, "%s%s", path, deleted ? " (deleted)" : "");
	while (fgets(line, sizeof line, f) != NULL) {
		char *p = line;
		size_t len;

		/* Skip the five columns before the pathname. */
		for (int col = 0; col < 5 && p != NULL; col++) {
			p = strchr(p, ' ');
			while (p != NULL && *p == ' ')
				p++;
		}
		if (p == NULL)
			continue;
		len = strlen(p);
		if (len > 0 && p[len - 1] == '\n')
			p[--len] = '\0';
		if (strcmp(p, want) == 0)
			count++;
	}
	fclose(f);
	return count;
}

static inline int
st_test_mappings(const char *path)
{
	return st_test_mappings_of(path, false);
}

/* Whether [@p, @p + @n) lies inside a mapping of @path (by address, in
 * /proc/self/maps). */
static inline bool
st_test_in_mapping(const char *path, const void *p, size_t n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 256];
	uintptr_t a = (uintptr_t)p;
	bool inside = false;

	if (f == NULL)
		return false;
	while (!inside && fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		char *name = strchr(line, '/');
		size_t len;

		if (name == NULL || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		len = strlen(name);
		if (len > 0 && name[len - 1] == '\n')
			name[--len] = '\0';
		if (strcmp(name, path) == 0 && a >= lo && a + n <= hi)
			inside = true;
	}
	fclose(f);
	return inside;
}

/* Entries of @dir named ".BASE.cowstore-*" (a save's temporary files). */
static inline int
st_test_leftovers(const char *dir, const char *base)
{
	char prefix[PATH_MAX + 16];
	DIR *d = opendir(dir);
	struct dirent *e;
	int count = 0;

	if (d == NULL)
		return -1;
	snprintf(prefix, sizeof prefix, ".%s.cowstore-", base);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			count++;
	closedir(d);
	return count;
}

/* The elements of a layout over @base (bytes of its storage) in C order
 * into @out: sizes and strides in elements, @offset in elements. Walked
 * here, index by index, independently of the library's gather. */
static inline void
st_test_c_order(const void *base, size_t itemsize, int ndim,
    const int64_t *sizes, const int64_t *strides, int64_t offset, void *out)
{
	int64_t idx[COW_TENSOR_MAX_NDIM] = {0}, numel = 1;
	unsigned char *o = out;

	for (int d = 0; d < ndim; d++)
		numel *= sizes[d];
	for (int64_t k = 0; k < numel; k++) {
		int64_t at = offset;

		for (int d = 0; d < ndim; d++)
			at += idx[d] * strides[d];
		memcpy(o + (size_t)k * itemsize,
		    (const unsigned char *)base + (size_t)at * itemsize,
		    itemsize);
		for (int d = ndim - 1; d >= 0; d--) {
			if (++idx[d] < sizes[d])
				break;
			idx[d] = 0;
		}
	}
}

/* @t's elements in C order, as a malloc'd buffer of numel * itemsize
 * bytes (at least 1): from its storage's bytes, walked by
 * st_test_c_order. */
static inline void *
st_test_tensor_bytes(const cow_tensor_t *t, size_t *n)
{
	size_t k = cow_dtype_size(cow_tensor_dtype(t));
	size_t len = (size_t)cow_tensor_numel(t) * k;
	void *out = malloc(len > 0 ? len : 1);
	const void *base;

	*n = len;
	if (out == NULL || len == 0)
		return out;
	base = cow_storage_const_data(cow_tensor_storage(t));
	st_test_c_order(base, k, cow_tensor_ndim(t), cow_tensor_sizes(t),
	    cow_tensor_strides(t), cow_tensor_offset(t), out);
	return out;
}

/* Save @snap to @path on this thread (cow_safetensors_save), or as a job
 * waited for and released (cow_safetensors_save_start). */
static inline cow_status_t
st_test_save(cow_snapshot_t *snap, const char *path,
    const cow_safetensors_save_t *opts, bool job)
{
	cow_snapshot_job_t *j;
	cow_status_t st;

	if (!job)
		return cow_safetensors_save(snap, path, opts);
	if ((st = cow_safetensors_save_start(snap, path, opts, &j)) != COW_OK)
		return st;
	st = cow_snapshot_job_wait(j);
	cow_snapshot_job_release(j);
	return st;
}

/* The device and inode of @path, or {0, 0}. */
struct st_test_id {
	dev_t dev;
	ino_t ino;
};

static inline struct st_test_id
st_test_id(const char *path)
{
	struct stat sb;
	struct st_test_id id = {0, 0};

	if (stat(path, &sb) == 0) {
		id.dev = sb.st_dev;
		id.ino = sb.st_ino;
	}
	return id;
}

#endif
