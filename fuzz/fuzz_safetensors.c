/*
 * fuzz_safetensors.c - the safetensors loader (cow_safetensors_open and
 * its accessors, include/cowstore/safetensors.h) against an independent
 * validator (safetensors_ref.c, written from the format's specification).
 *
 * Input: the whole input is the file. It is written to a memfd (a
 * temporary file where there is none) and opened through its path twice,
 * mapped and with COW_SAFETENSORS_PREAD. In each mode:
 * - the verdicts agree: cowstore accepts exactly the files the validator
 *   accepts;
 * - a refusal is COW_EFORMAT, leaves *out as it was and records a message
 *   that names cow_safetensors_open;
 * - an accepted file's index is the validator's: the tensors in the
 *   header's order (name, dtype, shape, bytes; cow_safetensors_find of each
 *   name), the metadata in the header's order (cow_safetensors_metadata_get
 *   of each key), and the out-of-range answers the header documents;
 * - every tensor from cow_safetensors_get has its dtype and shape, is
 *   contiguous, is aligned as tensor.h asks (its element size; for C64,
 *   4), and holds the file's bytes;
 *   mapped, an aligned tensor taken twice is the same memory (no copy);
 *   with pread, two buffers of their own; cow_safetensors_stats counts the
 *   tensors taken and the copies made for alignment;
 * - a first write to one tensor (after a lazy clone of it and a second get)
 *   copies that tensor's bytes and no others (cow_stats bytes_copied) and
 *   changes no other tensor, neither the clone, nor the second get, nor the
 *   file;
 * - the handle is closed before or after the tensors are released (the
 *   tensors stay readable after the close); at the end no mapping of the
 *   file is left (/proc/self/maps) and no file descriptor; with pread the
 *   file is never mapped. ASan and LSan (the fuzz preset) catch reads
 *   outside buffers and leaks.
 * Once per process, the refusals that judge no file: an unknown flag, a
 * NULL path or out-parameter (COW_EINVAL), a missing path or a directory
 * (COW_EIO), each leaving *out alone and naming cow_safetensors_open.
 *
 * The validator decides the few cases where cowstore means to refuse what
 * the format allows (\u0000 in names and metadata, more than 16
 * dimensions, sizes above INT64_MAX, F8/F6/F4 dtypes, null metadata) or
 * where the format leaves a choice (duplicate keys; the element count of
 * shapes with a 0): safetensors_ref.c's "Intended divergences" lists them.
 *
 * A finding aborts with "fuzz_safetensors: <what> (<mode>): <details>".
 * FUZZ_SAFETENSORS_TRACE=1 prints each verdict (the corpus test reads it).
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cowstore/cowstore.h>

#include "fuzz_input.h"
#include "safetensors_ref.h"

/* The file every input is written to. */
static int file_fd = -1;
static char file_path[PATH_MAX];  /* what cow_safetensors_open opens */
static char map_marker[PATH_MAX]; /* its name in /proc/self/maps */
static bool trace;

/* One input in one mode. */
struct run {
	const uint8_t *data;
	size_t size;
	const struct stref_file *ref;
	unsigned flags;
	const char *mode; /* "mapped" or "pread" */
	uint64_t hash;    /* of the input: picks the choices below */
};

static void st_fail(const struct run *x, const char *what, const char *fmt,
    ...) __attribute__((format(printf, 3, 4), noreturn));

static void
st_fail(const struct run *x, const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_safetensors: %s (%s): ", what,
	    x != NULL ? x->mode : "setup");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (x != NULL && x->ref->rule != STREF_VALID)
		fprintf(stderr, "fuzz_safetensors: the reference refuses "
		    "the file (%s): %s\n", stref_rule_name(x->ref->rule),
		    x->ref->why);
	abort();
}

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_safetensors: %s: %s\n", what, strerror(errno));
	abort();
}

/*
 * Once: what cow_safetensors_open says where no file is judged (an unknown
 * flag, NULL, no such file, not a regular file), *out untouched each time.
 */
static void
check_arguments(void)
{
	static const struct {
		const char *path;
		unsigned flags;
		bool null_out;
		cow_status_t expect;
	} calls[] = {
		{ "/nonexistent/fuzz_safetensors", 0, false, COW_EIO },
		{ "/", COW_SAFETENSORS_PREAD, false, COW_EIO },
		{ "/", 0, false, COW_EIO },
		{ NULL, 0, false, COW_EINVAL },
		{ "/", 0, true, COW_EINVAL },
		{ "/", 1u << 7, false, COW_EINVAL }
	};
	static char sentinel;
	cow_safetensors_t *f;
	cow_status_t st;

	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
		f = (cow_safetensors_t *)&sentinel;
		st = cow_safetensors_open(calls[i].path, calls[i].flags,
		    calls[i].null_out ? NULL : &f);
		if (st != calls[i].expect ||
		    f != (cow_safetensors_t *)&sentinel ||
		    strstr(cow_last_error(), "cow_safetensors_open") == NULL)
			st_fail(NULL, "argument check", "open(\"%s\", 0x%x%s): "
			    "%s (%s), expected %s and *out untouched",
			    calls[i].path != NULL ? calls[i].path : "(NULL)",
			    calls[i].flags, calls[i].null_out ? ", NULL" : "",
			    cow_status_str(st), cow_last_error(),
			    cow_status_str(calls[i].expect));
	}
}

static void
setup(void)
{
	const char *tmp;
	int fd;

	trace = getenv("FUZZ_SAFETENSORS_TRACE") != NULL;
	if ((fd = memfd_create("fuzz_safetensors", MFD_CLOEXEC)) >= 0) {
		snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", fd);
		snprintf(map_marker, sizeof map_marker,
		    "/memfd:fuzz_safetensors");
	} else {
		/* No memfd (an old kernel or an emulator): a file. */
		if ((tmp = getenv("TMPDIR")) == NULL || *tmp == '\0')
			tmp = "/tmp";
		snprintf(file_path, sizeof file_path,
		    "%s/fuzz_safetensors.XXXXXX", tmp);
		if ((fd = mkstemp(file_path)) < 0)
			die(file_path);
		/* Unlinked at once: the harness reopens it by its fd. */
		snprintf(map_marker, sizeof map_marker, "%s", file_path);
		unlink(file_path);
		snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", fd);
	}
	file_fd = fd;
	check_arguments();
}

static void
write_file(const uint8_t *data, size_t size)
{
	size_t done = 0;
	ssize_t n;

	if (ftruncate(file_fd, 0) != 0)
		die("ftruncate");
	while (done < size) {
		if ((n = pwrite(file_fd, data + done, size - done,
		    (off_t)done)) < 0) {
			if (errno == EINTR)
				continue;
			die("pwrite");
		}
		done += (size_t)n;
	}
}

/* The file still holds the input (nothing wrote through a mapping). */
static void
check_file(const struct run *x)
{
	uint8_t buf[4096];
	size_t done = 0, len;
	ssize_t n;

	if (lseek(file_fd, 0, SEEK_END) != (off_t)x->size)
		st_fail(x, "the file changed", "its size is not %zu",
		    x->size);
	while (done < x->size) {
		len = x->size - done < sizeof buf ? x->size - done : sizeof buf;
		if ((n = pread(file_fd, buf, len, (off_t)done)) <= 0)
			die("pread");
		if (memcmp(buf, x->data + done, (size_t)n) != 0)
			st_fail(x, "the file changed", "near byte %zu", done);
		done += (size_t)n;
	}
}

/* The lowest free file descriptor. */
static int
lowest_free_fd(void)
{
	int fd;

	if ((fd = dup(file_fd)) < 0)
		die("dup");
	close(fd);
	return fd;
}

/* Whether the file is mapped into this process. */
static bool
file_mapped(void)
{
	char line[PATH_MAX + 256];
	bool found = false;
	FILE *maps;

	if ((maps = fopen("/proc/self/maps", "r")) == NULL)
		die("/proc/self/maps");
	while (fgets(line, sizeof line, maps) != NULL)
		if (strstr(line, map_marker) != NULL)
			found = true;
	fclose(maps);
	return found;
}

static uint64_t
fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;

	for (size_t k = 0; k < n; k++) {
		h ^= p[k];
		h *= 0x100000001b3u;
	}
	return h;
}

/* ------------------------------------------------------------------ */
/* An accepted file. */

static const uint8_t *
file_bytes(const struct run *x, const struct stref_tensor *t)
{
	return x->data + x->ref->data_start + t->begin;
}

static uint64_t
extent(const struct stref_tensor *t)
{
	return t->end - t->begin;
}

/* The alignment a tensor's data needs (include/cowstore/tensor.h,
 * cow_tensor_from_external: the element size; for complex dtypes, the
 * size of one part). */
static unsigned
alignment(const struct stref_tensor *t)
{
	return t->dtype == COW_DTYPE_COMPLEX64 ? t->elem_size / 2 :
	    t->elem_size;
}

/* The tensor's bytes sit at an aligned address in a mapping of the file
 * (mappings start on a page). */
static bool
aligned_in_file(const struct run *x, const struct stref_tensor *t)
{
	return (x->ref->data_start + t->begin) % alignment(t) == 0;
}

static void
check_index(const struct run *x, cow_safetensors_t *f)
{
	const struct stref_file *ref = x->ref;
	const struct stref_tensor *t;
	const int64_t *sizes;
	const char *s;
	size_t n, idx;
	cow_status_t st;

	if ((n = cow_safetensors_count(f)) != ref->ntensors)
		st_fail(x, "index mismatch", "%zu tensors, the reference "
		    "has %zu", n, ref->ntensors);
	for (size_t i = 0; i < n; i++) {
		t = &ref->tensors[i];
		if ((s = cow_safetensors_name(f, i)) == NULL ||
		    strcmp(s, t->name) != 0)
			st_fail(x, "index mismatch", "tensor %zu is named "
			    "\"%s\", the reference's \"%s\"", i,
			    s != NULL ? s : "(NULL)", t->name);
		if ((int)cow_safetensors_dtype(f, i) != t->dtype)
			st_fail(x, "index mismatch", "tensor \"%s\": dtype "
			    "%d, the reference's %d", t->name,
			    (int)cow_safetensors_dtype(f, i), t->dtype);
		if (cow_safetensors_ndim(f, i) != t->ndim)
			st_fail(x, "index mismatch", "tensor \"%s\": ndim %d, "
			    "the reference's %d", t->name,
			    cow_safetensors_ndim(f, i), t->ndim);
		sizes = cow_safetensors_sizes(f, i);
		if (t->ndim > 0 && sizes == NULL)
			st_fail(x, "index mismatch", "tensor \"%s\": no sizes",
			    t->name);
		for (int d = 0; d < t->ndim; d++)
			if (sizes[d] != t->sizes[d])
				st_fail(x, "index mismatch", "tensor \"%s\": "
				    "size %d is %lld, the reference's %lld",
				    t->name, d, (long long)sizes[d],
				    (long long)t->sizes[d]);
		if (cow_safetensors_nbytes(f, i) != extent(t))
			st_fail(x, "index mismatch", "tensor \"%s\": %llu "
			    "bytes, the reference's %llu", t->name,
			    (unsigned long long)cow_safetensors_nbytes(f, i),
			    (unsigned long long)extent(t));
		idx = SIZE_MAX;
		if ((st = cow_safetensors_find(f, t->name, &idx)) != COW_OK ||
		    idx != i)
			st_fail(x, "index mismatch", "find(\"%s\"): %s, index "
			    "%zu, expected %zu", t->name, cow_status_str(st),
			    idx, i);
	}
	/* Out of range (safetensors.h). */
	if (cow_safetensors_name(f, n) != NULL ||
	    cow_safetensors_dtype(f, n) != COW_DTYPE_INVALID ||
	    cow_safetensors_ndim(f, n) != -1 ||
	    cow_safetensors_sizes(f, n) != NULL ||
	    cow_safetensors_nbytes(f, n) != 0)
		st_fail(x, "index mismatch", "tensor %zu (out of range) is "
		    "not NULL, COW_DTYPE_INVALID, -1, NULL, 0", n);
	idx = SIZE_MAX;
	if ((st = cow_safetensors_find(f, "__metadata__", &idx)) !=
	    COW_ERANGE || idx != SIZE_MAX)
		st_fail(x, "index mismatch", "find(\"__metadata__\"): %s, "
		    "expected COW_ERANGE and the index untouched",
		    cow_status_str(st));

	if ((n = cow_safetensors_metadata_count(f)) != ref->nmeta)
		st_fail(x, "metadata mismatch", "%zu pairs, the reference "
		    "has %zu", n, ref->nmeta);
	for (size_t i = 0; i < n; i++) {
		const struct stref_meta *m = &ref->meta[i];

		if ((s = cow_safetensors_metadata_key(f, i)) == NULL ||
		    strcmp(s, m->key) != 0)
			st_fail(x, "metadata mismatch", "key %zu is \"%s\", "
			    "the reference's \"%s\"", i,
			    s != NULL ? s : "(NULL)", m->key);
		if ((s = cow_safetensors_metadata_value(f, i)) == NULL ||
		    strcmp(s, m->value) != 0)
			st_fail(x, "metadata mismatch", "key \"%s\": value "
			    "\"%s\", the reference's \"%s\"", m->key,
			    s != NULL ? s : "(NULL)", m->value);
		if ((s = cow_safetensors_metadata_get(f, m->key)) == NULL ||
		    strcmp(s, m->value) != 0)
			st_fail(x, "metadata mismatch", "get(\"%s\") gives "
			    "\"%s\", the reference's \"%s\"", m->key,
			    s != NULL ? s : "(NULL)", m->value);
	}
	if (cow_safetensors_metadata_key(f, n) != NULL ||
	    cow_safetensors_metadata_value(f, n) != NULL)
		st_fail(x, "metadata mismatch", "pair %zu (out of range) is "
		    "not NULL", n);
	/* A key the file lacks gives NULL. */
	for (size_t i = 0; i < n; i++)
		if (strcmp(ref->meta[i].key, "\001absent") == 0)
			return;
	if (cow_safetensors_metadata_get(f, "\001absent") != NULL)
		st_fail(x, "metadata mismatch", "get of a key the file lacks "
		    "is not NULL");
}

/* @tensor is the reference's @t, holding @expect (extent(t) bytes). */
static void
check_tensor(const struct run *x, const struct stref_tensor *t,
    const cow_tensor_t *tensor, const uint8_t *expect, const char *which)
{
	const void *p = &p;
	cow_status_t st;
	int64_t numel;

	if ((int)cow_tensor_dtype(tensor) != t->dtype ||
	    cow_tensor_ndim(tensor) != t->ndim)
		st_fail(x, "tensor mismatch", "%s \"%s\": dtype %d ndim %d, "
		    "expected %d and %d", which, t->name,
		    (int)cow_tensor_dtype(tensor), cow_tensor_ndim(tensor),
		    t->dtype, t->ndim);
	for (int d = 0; d < t->ndim; d++)
		if (cow_tensor_sizes(tensor)[d] != t->sizes[d])
			st_fail(x, "tensor mismatch", "%s \"%s\": size %d is "
			    "%lld, expected %lld", which, t->name, d,
			    (long long)cow_tensor_sizes(tensor)[d],
			    (long long)t->sizes[d]);
	/* The element count: the bytes are in the file, so it fits. */
	numel = (int64_t)(extent(t) / t->elem_size);
	if (cow_tensor_numel(tensor) != numel ||
	    !cow_tensor_is_contiguous(tensor) ||
	    cow_tensor_nbytes(tensor) != extent(t))
		st_fail(x, "tensor mismatch", "%s \"%s\": numel %lld, "
		    "contiguous %d, nbytes %zu; expected %lld, 1, %llu", which,
		    t->name, (long long)cow_tensor_numel(tensor),
		    (int)cow_tensor_is_contiguous(tensor),
		    cow_tensor_nbytes(tensor), (long long)numel,
		    (unsigned long long)extent(t));
	if ((st = cow_tensor_read_data(tensor, &p)) != COW_OK)
		st_fail(x, "tensor mismatch", "%s \"%s\": read_data: %s: %s",
		    which, t->name, cow_status_str(st), cow_last_error());
	if (extent(t) == 0) {
		if (p != NULL)
			st_fail(x, "tensor mismatch", "%s \"%s\": no elements "
			    "but read_data gives non-NULL", which, t->name);
		return;
	}
	if (p == NULL || (uintptr_t)p % alignment(t) != 0)
		st_fail(x, "tensor mismatch", "%s \"%s\": data %p is not "
		    "aligned to %u bytes", which, t->name, p, alignment(t));
	if (memcmp(p, expect, (size_t)extent(t)) != 0)
		st_fail(x, "tensor mismatch", "%s \"%s\": its bytes are not "
		    "the file's", which, t->name);
}

static void
check_accepted(const struct run *x, cow_safetensors_t *f)
{
	const struct stref_file *ref = x->ref;
	cow_tensor_t **tensors, *again = NULL, *clone = NULL;
	const struct stref_tensor *tk = NULL;
	cow_safetensors_stats_t ss;
	cow_stats_t before, after;
	uint64_t unaligned = 0, unaligned_empty = 0, copied = 0, taken;
	uint64_t read = 0;
	uint8_t *want = NULL, *p;
	size_t n = ref->ntensors, k = 0, i;
	cow_tensor_t *out;
	bool close_first = (x->hash >> 8) & 1;
	cow_status_t st;

	check_index(x, f);
	if ((tensors = calloc(n + 1, sizeof *tensors)) == NULL)
		die("calloc");
	for (i = 0; i < n; i++) {
		const struct stref_tensor *t = &ref->tensors[i];

		tensors[i] = NULL;
		if ((st = cow_safetensors_get(f, i, &tensors[i])) != COW_OK)
			st_fail(x, "get failed", "tensor \"%s\": %s: %s",
			    t->name, cow_status_str(st), cow_last_error());
		check_tensor(x, t, tensors[i], file_bytes(x, t), "tensor");
		read += extent(t);
		if (!aligned_in_file(x, t)) {
			if (extent(t) > 0) {
				unaligned++;
				copied += extent(t);
			} else {
				unaligned_empty++;
			}
		}
	}
	out = (cow_tensor_t *)&out;
	if ((st = cow_safetensors_get(f, n, &out)) != COW_ERANGE ||
	    out != (cow_tensor_t *)&out)
		st_fail(x, "get mismatch", "get(%zu) (out of range): %s, "
		    "expected COW_ERANGE and *out untouched", n,
		    cow_status_str(st));

	/* The tensor to write: the first with bytes from a place the input
	 * picks. It is taken twice and cloned lazily first. */
	for (i = 0; i < n && tk == NULL; i++) {
		k = (size_t)((x->hash + i) % n);
		if (extent(&ref->tensors[k]) > 0)
			tk = &ref->tensors[k];
	}
	taken = n;
	if (tk != NULL) {
		if ((st = cow_safetensors_get(f, k, &again)) != COW_OK)
			st_fail(x, "get failed", "tensor \"%s\" again: %s: %s",
			    tk->name, cow_status_str(st), cow_last_error());
		taken++;
		read += extent(tk);
		if (!aligned_in_file(x, tk)) {
			unaligned++;
			copied += extent(tk);
		}
		check_tensor(x, tk, again, file_bytes(x, tk), "second get of");
		if ((x->flags & COW_SAFETENSORS_PREAD) != 0 ||
		    !aligned_in_file(x, tk)) {
			if (cow_tensor_const_data(again) ==
			    cow_tensor_const_data(tensors[k]))
				st_fail(x, "get mismatch", "tensor \"%s\" taken "
				    "twice shares one buffer (pread or an "
				    "aligned copy gives each its own)",
				    tk->name);
		} else if (cow_tensor_const_data(again) !=
		    cow_tensor_const_data(tensors[k])) {
			st_fail(x, "get mismatch", "aligned tensor \"%s\" "
			    "taken twice from the mapping is two copies",
			    tk->name);
		}
		if ((st = cow_tensor_lazy_clone(tensors[k], &clone)) != COW_OK)
			st_fail(x, "lazy clone failed", "tensor \"%s\": %s: %s",
			    tk->name, cow_status_str(st), cow_last_error());
	}

	cow_safetensors_stats(f, &ss);
	if (ss.tensors != taken)
		st_fail(x, "stats mismatch", "tensors %llu, %llu taken",
		    (unsigned long long)ss.tensors,
		    (unsigned long long)taken);
	if ((x->flags & COW_SAFETENSORS_PREAD) != 0) {
		if (ss.unaligned_copies != 0 || ss.mapped_bytes != 0 ||
		    ss.bytes_read < read)
			st_fail(x, "stats mismatch", "pread: %llu unaligned "
			    "copies, %llu mapped bytes, %llu bytes read; "
			    "expected 0, 0 and at least %llu",
			    (unsigned long long)ss.unaligned_copies,
			    (unsigned long long)ss.mapped_bytes,
			    (unsigned long long)ss.bytes_read,
			    (unsigned long long)read);
		if (file_mapped())
			st_fail(x, "pread maps the file", "while it is open");
	} else if (ss.unaligned_copies < unaligned ||
	    ss.unaligned_copies > unaligned + unaligned_empty ||
	    ss.bytes_read < copied) {
		st_fail(x, "stats mismatch", "%llu unaligned copies and %llu "
		    "bytes read; %llu unaligned tensors with bytes (and %llu "
		    "without) taken, %llu bytes to copy",
		    (unsigned long long)ss.unaligned_copies,
		    (unsigned long long)ss.bytes_read,
		    (unsigned long long)unaligned,
		    (unsigned long long)unaligned_empty,
		    (unsigned long long)copied);
	}

	/* The first write copies that tensor's bytes alone. */
	if (tk != NULL) {
		if ((want = malloc((size_t)extent(tk))) == NULL)
			die("malloc");
		for (uint64_t b = 0; b < extent(tk); b++)
			want[b] = (uint8_t)~file_bytes(x, tk)[b];
		cow_stats_get(&before);
		p = NULL;
		if ((st = cow_tensor_mutable_data(tensors[k], (void **)&p)) !=
		    COW_OK || p == NULL)
			st_fail(x, "write failed", "tensor \"%s\": %s: %s",
			    tk->name, cow_status_str(st), cow_last_error());
		memcpy(p, want, (size_t)extent(tk));
		cow_stats_get(&after);
		if (after.bytes_copied - before.bytes_copied != extent(tk))
			st_fail(x, "write copied", "%llu bytes for the first "
			    "write to tensor \"%s\" of %llu bytes (lazily "
			    "cloned)", (unsigned long long)
			    (after.bytes_copied - before.bytes_copied),
			    tk->name, (unsigned long long)extent(tk));
		check_tensor(x, tk, tensors[k], want, "written");
		check_tensor(x, tk, again, file_bytes(x, tk),
		    "after a write, second get of");
		check_tensor(x, tk, clone, file_bytes(x, tk),
		    "after a write, lazy clone of");
		for (i = 0; i < n; i++)
			if (i != k)
				check_tensor(x, &ref->tensors[i], tensors[i],
				    file_bytes(x, &ref->tensors[i]),
				    "after a write to another, tensor");
	}

	/* Release: the handle first or last; the tensors in either order. */
	if (close_first) {
		cow_safetensors_close(f);
		for (i = 0; i < n; i++)
			check_tensor(x, &ref->tensors[i], tensors[i],
			    i == k && tk != NULL ? want :
			    file_bytes(x, &ref->tensors[i]),
			    "after the close, tensor");
		if (tk != NULL) {
			check_tensor(x, tk, again, file_bytes(x, tk),
			    "after the close, second get of");
			check_tensor(x, tk, clone, file_bytes(x, tk),
			    "after the close, lazy clone of");
		}
	}
	cow_tensor_release(again);
	for (i = 0; i < n; i++)
		cow_tensor_release(tensors[(x->hash >> 9) & 1 ? n - 1 - i : i]);
	if (clone != NULL) {
		check_tensor(x, tk, clone, file_bytes(x, tk),
		    "last, lazy clone of");
		cow_tensor_release(clone);
	}
	if (!close_first)
		cow_safetensors_close(f);
	free(want);
	free(tensors);
}

/*
 * For a file the reference accepts: "" when its tensors cover the data,
 * else how much they cover (never, unless the validator is wrong: the
 * negative control's STREF_FAULT_ACCEPT_TRAILING).
 */
static const char *
coverage(const struct run *x)
{
	static char buf[128];
	uint64_t end = 0, data = x->size - x->ref->data_start;

	for (size_t i = 0; i < x->ref->ntensors; i++)
		if (x->ref->tensors[i].end > end)
			end = x->ref->tensors[i].end;
	if (end == data)
		return "";
	snprintf(buf, sizeof buf, " (its tensors cover only %llu of its %llu "
	    "data bytes)", (unsigned long long)end, (unsigned long long)data);
	return buf;
}

/* ------------------------------------------------------------------ */

static void
run_mode(const uint8_t *data, size_t size, const struct stref_file *ref,
    unsigned flags)
{
	static char sentinel;
	struct run x = {
		.data = data, .size = size, .ref = ref, .flags = flags,
		.mode = flags & COW_SAFETENSORS_PREAD ? "pread" : "mapped",
		.hash = fnv1a(data, size)
	};
	cow_safetensors_t *f = (cow_safetensors_t *)&sentinel;
	const char *msg;
	size_t idx;
	cow_status_t st;
	int fd0;

	fd0 = lowest_free_fd();
	/* An error of another function first, so that the message read
	 * after a refusal is the open's own. */
	if (cow_safetensors_find(NULL, "", &idx) != COW_EINVAL)
		st_fail(&x, "find(NULL) did not fail", "expected COW_EINVAL");
	st = cow_safetensors_open(file_path, flags, &f);
	msg = cow_last_error();
	if (trace)
		fprintf(stderr, "cowstore (%s): %s%s%s\n", x.mode,
		    cow_status_str(st), st != COW_OK ? ": " : "",
		    st != COW_OK ? msg : "");
	if (ref->rule == STREF_VALID && st != COW_OK)
		st_fail(&x, "verdicts disagree", "the reference accepts the "
		    "file%s, cowstore refuses it: %s: %s", coverage(&x),
		    cow_status_str(st), msg);
	if (ref->rule != STREF_VALID && st == COW_OK)
		st_fail(&x, "verdicts disagree", "the reference refuses the "
		    "file (%s: %s), cowstore accepts it",
		    stref_rule_name(ref->rule), ref->why);
	if (st != COW_OK) {
		if (st != COW_EFORMAT)
			st_fail(&x, "refusal mismatch", "%s (expected "
			    "COW_EFORMAT): %s", cow_status_str(st), msg);
		if (f != (cow_safetensors_t *)&sentinel)
			st_fail(&x, "refusal mismatch", "*out was written");
		if (strstr(msg, "cow_safetensors_open") == NULL)
			st_fail(&x, "refusal mismatch", "the message does "
			    "not name cow_safetensors_open: \"%s\"", msg);
	} else {
		check_accepted(&x, f);
	}
	if (file_mapped())
		st_fail(&x, "mapping left", "after the handle and every tensor "
		    "were released");
	if (lowest_free_fd() != fd0)
		st_fail(&x, "file descriptor left", "after the handle and "
		    "every tensor were released");
	check_file(&x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stref_file ref;

	if (file_fd < 0)
		setup();
	if (stref_check(data, size, &ref) != 0)
		die("the reference validator ran out of memory");
	if (trace) {
		if (ref.rule == STREF_VALID)
			fprintf(stderr, "reference: accepts (%zu tensors, "
			    "%zu metadata)\n", ref.ntensors, ref.nmeta);
		else
			fprintf(stderr, "reference: refuses (%s): %s\n",
			    stref_rule_name(ref.rule), ref.why);
	}
	write_file(data, size);
	run_mode(data, size, &ref, 0);
	run_mode(data, size, &ref, COW_SAFETENSORS_PREAD);
	stref_free(&ref);
	return 0;
}
