/*
 * read.c - opening a safetensors file: the header checked against every
 * rule of the reference reader, the index, and tensors over a read-only
 * mapping of the file (or read with pread) (docs/files.md).
 */
#define _DEFAULT_SOURCE /* pread, MAP_* */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/allocator.h"
#include "core/atomic.h"
#include "core/error.h"
#include "core/refcount.h"
#include "files/json.h"
#include "files/safetensors.h"
#include "tensor/entry_accessors.h"
#include "tensor/tensor.h"

/* The mapping, shared by the handle and every tensor over it. */
struct st_map {
	cow__refcount_t refs;  /* Synchronization: atomic. */
	void *addr;
	size_t len;
};

struct st_tensor {
	const char *name;
	cow_dtype_t dtype;
	int ndim;
	const int64_t *sizes;
	uint64_t begin, end, nbytes;
};

struct st_meta {
	const char *key, *value;
};

struct cow_safetensors {
	struct st_map *map;        /* NULL: COW_SAFETENSORS_PREAD */
	int fd;                    /* COW_SAFETENSORS_PREAD: the file */
	uint64_t data_start;       /* 8 + N */
	uint64_t file_size;
	size_t count, meta_count;
	struct st_tensor *tensors;
	struct st_meta *meta;
	/* Memory: the header's strings, the dimensions, the arrays. */
	char *arena;
	size_t arena_bytes;
	int64_t *dims;
	size_t dims_cap, dims_len;
	size_t tensors_cap, meta_cap;
	/* Counters. Synchronization: atomic. */
	cow__atomic_u64_t made, unaligned, bytes_read;
};

static const char *const st_names[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = "BOOL", [COW_DTYPE_UINT8] = "U8",
	[COW_DTYPE_INT8] = "I8", [COW_DTYPE_INT16] = "I16",
	[COW_DTYPE_UINT16] = "U16", [COW_DTYPE_INT32] = "I32",
	[COW_DTYPE_UINT32] = "U32", [COW_DTYPE_INT64] = "I64",
	[COW_DTYPE_UINT64] = "U64", [COW_DTYPE_FLOAT16] = "F16",
	[COW_DTYPE_BFLOAT16] = "BF16", [COW_DTYPE_FLOAT32] = "F32",
	[COW_DTYPE_FLOAT64] = "F64", [COW_DTYPE_COMPLEX64] = "C64",
};

/* Names the format knows that cowstore has no dtype for. */
static const char *const st_unsupported[] = {
	"F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4",
	"F6_E2M3", "F6_E3M2",
};

const char *
cow__st_dtype_name(cow_dtype_t dtype)
{
	return dtype >= 0 && dtype < COW_DTYPE_COUNT ? st_names[dtype] : NULL;
}

int
cow__st_dtype_parse(const char *name, cow_dtype_t *out)
{
	for (int d = 0; d < COW_DTYPE_COUNT; d++)
		if (st_names[d] != NULL && strcmp(st_names[d], name) == 0) {
			*out = (cow_dtype_t)d;
			return 0;
		}
	for (size_t i = 0; i < sizeof st_unsupported / sizeof *st_unsupported;
	    i++)
		if (strcmp(st_unsupported[i], name) == 0)
			return 1;
	return -1;
}

/* ------------------------------------------------------------------ */
/* The mapping. */

static void
map_unref(struct st_map *m)
{
	if (m != NULL && cow__ref_put(&m->refs)) {
		munmap(m->addr, m->len);
		cow__free(cow_allocator_default(), m, sizeof *m);
	}
}

/* A tensor's storage let go of its bytes (on any thread). */
static void
map_deleter(void *data, size_t nbytes, void *ctx)
{
	(void)data;
	(void)nbytes;
	map_unref(ctx);
}

/* ------------------------------------------------------------------ */
/* Memory of the index. */

static void
file_free(cow_safetensors_t *f)
{
	cow_allocator_t *a = cow_allocator_default();

	cow__free(a, f->arena, f->arena_bytes);
	cow__free(a, f->dims, f->dims_cap * sizeof *f->dims);
	cow__free(a, f->tensors, f->tensors_cap * sizeof *f->tensors);
	cow__free(a, f->meta, f->meta_cap * sizeof *f->meta);
	cow__free(a, f, sizeof *f);
}

/* Grow *@arr (@*cap elements of @size bytes) to hold one more than @len. */
static bool
grow(void **arr, size_t *cap, size_t len, size_t size)
{
	cow_allocator_t *a = cow_allocator_default();
	size_t ncap = *cap < 8 ? 8 : *cap * 2;
	void *p;

	if (len < *cap)
		return true;
	if ((p = cow__alloc(a, ncap * size)) == NULL)
		return false;
	if (len > 0)
		memcpy(p, *arr, len * size);
	cow__free(a, *arr, *cap * size);
	*arr = p;
	*cap = ncap;
	return true;
}

/* ------------------------------------------------------------------ */
/* The header. */

struct st_parse {
	cow_safetensors_t *f;
	struct cow__json j;
	char *strings;            /* where the next decoded string goes */
	bool metadata_seen;
	cow_status_t oom;         /* COW_ENOMEM once an allocation failed */
};

/* The next string, decoded into the arena; @nul_ok: it may hold \u0000
 * (only a key of a tensor's entry may: names, dtypes and metadata are
 * given as C strings), and *len is its length. */
static const char *
string_at(struct st_parse *ps, bool nul_ok, size_t *len)
{
	const char *s = ps->strings;
	size_t n;

	if (!cow__json_string(&ps->j, ps->strings, &n, nul_ok))
		return NULL;
	ps->strings += n + 1;
	if (len != NULL)
		*len = n;
	return s;
}

static const char *
next_string(struct st_parse *ps)
{
	return string_at(ps, false, NULL);
}

/* The decoded key @key of @len bytes is @word. */
static bool
key_is(const char *key, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(key, word, len) == 0;
}

static bool
parse_metadata(struct st_parse *ps)
{
	cow_safetensors_t *f = ps->f;

	if (ps->metadata_seen)
		return cow__json_fail(&ps->j, "duplicate key \"__metadata__\"");
	ps->metadata_seen = true;
	/* null is no metadata, as the reference reader takes it. */
	cow__json_ws(&ps->j);
	if (ps->j.end - ps->j.p >= 4 && memcmp(ps->j.p, "null", 4) == 0) {
		ps->j.p += 4;
		return true;
	}
	if (!cow__json_expect(&ps->j, '{', "for __metadata__ (it must be an "
	    "object of strings)"))
		return false;
	if (cow__json_take(&ps->j, '}'))
		return true;
	do {
		const char *key, *value;

		if ((key = next_string(ps)) == NULL ||
		    !cow__json_expect(&ps->j, ':', "after a metadata key"))
			return false;
		cow__json_ws(&ps->j);
		if (ps->j.p >= ps->j.end || *ps->j.p != '"')
			return cow__json_fail(&ps->j, "__metadata__ value of "
			    "\"%s\" is not a string", key);
		if ((value = next_string(ps)) == NULL)
			return false;
		for (size_t i = 0; i < f->meta_count; i++)
			if (strcmp(f->meta[i].key, key) == 0)
				return cow__json_fail(&ps->j, "duplicate "
				    "__metadata__ key \"%s\"", key);
		if (!grow((void **)&f->meta, &f->meta_cap, f->meta_count,
		    sizeof *f->meta))
			return ps->oom = COW_ENOMEM, false;
		f->meta[f->meta_count++] = (struct st_meta){key, value};
	} while (cow__json_take(&ps->j, ','));
	return cow__json_expect(&ps->j, '}', "to end __metadata__");
}

/* One tensor's entry: {"dtype": ..., "shape": [...], "data_offsets":
 * [begin, end]}, each once; other keys are skipped, as the reference
 * reader skips them (it refuses a field twice, and so does this). */
static bool
parse_entry(struct st_parse *ps, const char *name)
{
	cow_safetensors_t *f = ps->f;
	struct cow__json *j = &ps->j;
	const char *dtype = NULL;
	bool have_shape = false, have_offsets = false;
	struct st_tensor t = {.name = name, .dtype = COW_DTYPE_INVALID};
	size_t dims_at = f->dims_len;

	if (!cow__json_expect(j, '{', "for a tensor's entry"))
		return false;
	if (!cow__json_take(j, '}')) {
		do {
			size_t len;
			const char *key = string_at(ps, true, &len);

			if (key == NULL ||
			    !cow__json_expect(j, ':', "after a key"))
				return false;
			if (key_is(key, len, "dtype")) {
				if (dtype != NULL)
					return cow__json_fail(j, "tensor "
					    "\"%s\": two dtypes", name);
				cow__json_ws(j);
				if (j->p >= j->end || *j->p != '"')
					return cow__json_fail(j, "tensor \"%s\": "
					    "dtype is not a string", name);
				if ((dtype = next_string(ps)) == NULL)
					return false;
			} else if (key_is(key, len, "shape")) {
				if (have_shape)
					return cow__json_fail(j, "tensor "
					    "\"%s\": two shapes", name);
				have_shape = true;
				if (!cow__json_expect(j, '[', "for a shape "
				    "(a list of non-negative integers)"))
					return false;
				if (cow__json_take(j, ']'))
					continue;
				do {
					uint64_t v;

					if (!cow__json_uint(j, &v, "a shape's "
					    "size"))
						return false;
					if (v > INT64_MAX)
						return cow__json_fail(j, "tensor "
						    "\"%s\": size %llu does not "
						    "fit in 63 bits", name,
						    (unsigned long long)v);
					if (!grow((void **)&f->dims,
					    &f->dims_cap, f->dims_len,
					    sizeof *f->dims))
						return ps->oom = COW_ENOMEM,
						    false;
					f->dims[f->dims_len++] = (int64_t)v;
				} while (cow__json_take(j, ','));
				if (!cow__json_expect(j, ']', "to end a shape"))
					return false;
			} else if (key_is(key, len, "data_offsets")) {
				if (have_offsets)
					return cow__json_fail(j, "tensor "
					    "\"%s\": two data_offsets", name);
				have_offsets = true;
				if (!cow__json_expect(j, '[', "for "
				    "data_offsets (a list of two integers)") ||
				    !cow__json_uint(j, &t.begin, "data_offsets"
				    "[0]") ||
				    !cow__json_expect(j, ',', "in data_offsets "
				    "(two integers)") ||
				    !cow__json_uint(j, &t.end, "data_offsets"
				    "[1]") ||
				    !cow__json_expect(j, ']', "after "
				    "data_offsets' two integers"))
					return false;
			} else if (!cow__json_skip(j)) {
				return false;
			}
		} while (cow__json_take(j, ','));
		if (!cow__json_expect(j, '}', "to end a tensor's entry"))
			return false;
	}
	if (dtype == NULL || !have_shape || !have_offsets)
		return cow__json_fail(j, "tensor \"%s\" has no %s", name,
		    dtype == NULL ? "dtype" : !have_shape ? "shape" :
		    "data_offsets");
	switch (cow__st_dtype_parse(dtype, &t.dtype)) {
	case 1:
		return cow__json_fail(j, "tensor \"%s\": dtype %s is valid "
		    "safetensors but cowstore has no such dtype", name, dtype);
	case -1:
		return cow__json_fail(j, "tensor \"%s\": unknown dtype \"%s\"",
		    name, dtype);
	}
	t.ndim = (int)(f->dims_len - dims_at);
	if (f->dims_len - dims_at > COW_TENSOR_MAX_NDIM)
		return cow__json_fail(j, "tensor \"%s\": %zu dimensions; "
		    "cowstore tensors have at most %d", name,
		    f->dims_len - dims_at, COW_TENSOR_MAX_NDIM);
	/* dims may move as it grows: the offset now, pointers at the end. */
	t.sizes = (const int64_t *)(uintptr_t)dims_at;
	if (!grow((void **)&f->tensors, &f->tensors_cap, f->count,
	    sizeof *f->tensors))
		return ps->oom = COW_ENOMEM, false;
	f->tensors[f->count++] = t;
	return true;
}

/* parse_entry, whose errors all name the tensor. */
static bool
parse_tensor(struct st_parse *ps, const char *name)
{
	struct cow__json *j = &ps->j;
	char msg[sizeof j->error];
	int n;

	if (parse_entry(ps, name))
		return true;
	/* (The message is cut to the buffer's size, as any.) */
	n = snprintf(msg, sizeof msg, "tensor \"%s\"", name);
	if (n > 0 && strncmp(j->error, msg, (size_t)n) != 0 &&
	    snprintf(msg, sizeof msg, "tensor \"%s\": %s", name,
	    j->error) > 0)
		memcpy(j->error, msg, sizeof msg);
	return false;
}

static bool
parse_header(struct st_parse *ps)
{
	struct cow__json *j = &ps->j;

	if (!cow__json_expect(j, '{', "at the start (the header must be a "
	    "JSON object)"))
		return false;
	if (!cow__json_take(j, '}')) {
		do {
			const char *key;

			cow__json_ws(j);
			if ((key = next_string(ps)) == NULL ||
			    !cow__json_expect(j, ':', "after a key"))
				return false;
			if (strcmp(key, "__metadata__") == 0) {
				if (!parse_metadata(ps))
					return false;
			} else if (!parse_tensor(ps, key)) {
				return false;
			}
		} while (cow__json_take(j, ','));
		if (!cow__json_expect(j, '}', "to end the header's object"))
			return false;
	}
	cow__json_ws(j);
	if (j->p != j->end)
		return cow__json_fail(j, "bytes after the header's JSON object");
	return true;
}

/* ------------------------------------------------------------------ */
/* The rules that span tensors. */

static cow_status_t
format_error(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static cow_status_t
format_error(const char *path, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return cow__error(COW_EFORMAT, "%s: %s", path, msg);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct st_tensor *)a)->name,
	    ((const struct st_tensor *)b)->name);
}

/* A copy of the index sorted by @cmp (NULL when memory ran out). */
static struct st_tensor *
sorted(const cow_safetensors_t *f, int (*cmp)(const void *, const void *))
{
	struct st_tensor *s = cow__alloc(cow_allocator_default(),
	    f->count * sizeof *s);

	if (s != NULL) {
		memcpy(s, f->tensors, f->count * sizeof *s);
		qsort(s, f->count, sizeof *s, cmp);
	}
	return s;
}

static int
by_begin(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static cow_status_t
check_tensors(cow_safetensors_t *f, const char *path)
{
	uint64_t data = f->file_size - f->data_start, at = 0;
	struct st_tensor *s;
	cow_status_t st = COW_OK;

	for (size_t i = 0; i < f->count; i++) {
		struct st_tensor *t = &f->tensors[i];
		uint64_t n = cow_dtype_size(t->dtype);
		char shape[COW_TENSOR_MAX_NDIM * 21 + 3], *p = shape;

		bool over = false;
		uint64_t count = 1, bits;

		*p++ = '[';
		/* As the reference reader: the element count, multiplied from
		 * the left (a zero after an overflow does not save it), times
		 * the element's size in bits. */
		for (int d = 0; d < t->ndim; d++) {
			p += sprintf(p, "%s%lld", d > 0 ? ", " : "",
			    (long long)t->sizes[d]);
			over |= __builtin_mul_overflow(count,
			    (uint64_t)t->sizes[d], &count);
		}
		strcpy(p, "]");
		if (over || __builtin_mul_overflow(count, 8 * n, &bits))
			return format_error(path, "tensor \"%s\": shape %s of "
			    "%s: its element count times its element size "
			    "overflows", t->name, shape,
			    cow__st_dtype_name(t->dtype));
		n = bits / 8;
		if (t->end < t->begin)
			return format_error(path, "tensor \"%s\": data_offsets "
			    "[%llu, %llu] end before they begin", t->name,
			    (unsigned long long)t->begin,
			    (unsigned long long)t->end);
		if (t->end - t->begin != n)
			return format_error(path, "tensor \"%s\": data_offsets "
			    "[%llu, %llu] span %llu bytes, but shape %s of %s "
			    "needs %llu", t->name,
			    (unsigned long long)t->begin,
			    (unsigned long long)t->end,
			    (unsigned long long)(t->end - t->begin), shape,
			    cow__st_dtype_name(t->dtype),
			    (unsigned long long)n);
		t->nbytes = n;
	}
	if (f->count == 0)
		return data == 0 ? COW_OK : format_error(path, "%llu bytes "
		    "after the header, which lists no tensor",
		    (unsigned long long)data);
	if ((s = sorted(f, by_name)) == NULL)
		return COW_ENOMEM;
	for (size_t i = 1; i < f->count && st == COW_OK; i++)
		if (strcmp(s[i - 1].name, s[i].name) == 0)
			st = format_error(path, "duplicate tensor name \"%s\"",
			    s[i].name);
	if (st == COW_OK) {
		qsort(s, f->count, sizeof *s, by_begin);
		for (size_t i = 0; i < f->count && st == COW_OK; i++) {
			if (s[i].begin != at && i == 0)
				st = format_error(path, "the tensors do not "
				    "cover the data exactly: the first, \"%s\", "
				    "begins at %llu, not 0", s[i].name,
				    (unsigned long long)s[i].begin);
			else if (s[i].begin != at)
				st = format_error(path, "the tensors do not "
				    "cover the data exactly: \"%s\" begins at "
				    "%llu, but \"%s\" before it ends at %llu "
				    "(%s)", s[i].name,
				    (unsigned long long)s[i].begin,
				    s[i - 1].name, (unsigned long long)at,
				    s[i].begin > at ? "a gap" : "an overlap");
			at = s[i].end;
		}
		if (st == COW_OK && at > data)
			st = format_error(path, "tensor \"%s\" ends at %llu, "
			    "past the end of the file's data (%llu bytes)",
			    s[f->count - 1].name, (unsigned long long)at,
			    (unsigned long long)data);
		else if (st == COW_OK && at < data)
			st = format_error(path, "%llu bytes after the last "
			    "tensor (\"%s\" ends at %llu of %llu)",
			    (unsigned long long)(data - at),
			    s[f->count - 1].name, (unsigned long long)at,
			    (unsigned long long)data);
	}
	cow__free(cow_allocator_default(), s, f->count * sizeof *s);
	return st;
}

/* ------------------------------------------------------------------ */
/* Opening. */

static cow_status_t
io_error(const char *call, const char *path)
{
	int err = errno;

	return cow__error(COW_EIO, "%s(\"%s\"): %s", call, path, strerror(err));
}

/* Read @n bytes at @off of @fd into @buf; -1 with errno, or the bytes
 * read (fewer at the end of the file). */
static ssize_t
pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done,
		    (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* The sizes of a 0-d tensor when the header has no dimension at all. */
static const int64_t no_dims[1];

/* The header's @n bytes at @text: checked, parsed, indexed. */
static cow_status_t
index_header(cow_safetensors_t *f, const char *text, size_t n,
    const char *path)
{
	struct st_parse ps = {.f = f};
	size_t bad;

	if (!cow__utf8_valid(text, n, &bad))
		return format_error(path, "the header is not valid UTF-8 "
		    "(header byte %zu)", bad);
	f->arena_bytes = n + 1;
	if ((f->arena = cow__alloc(cow_allocator_default(),
	    f->arena_bytes)) == NULL)
		return COW_ENOMEM;
	ps.strings = f->arena;
	cow__json_init(&ps.j, text, n);
	if (!parse_header(&ps))
		return ps.oom != COW_OK ? ps.oom :
		    format_error(path, "%s", ps.j.error);
	/* No dimension in the whole header (scalars only): no dims array,
	 * and NULL + 0 is undefined. */
	for (size_t i = 0; i < f->count; i++)
		f->tensors[i].sizes = f->dims == NULL ? no_dims : f->dims +
		    (uintptr_t)f->tensors[i].sizes;
	return check_tensors(f, path);
}

static cow_status_t
open_file(cow_safetensors_t *f, const char *path, unsigned flags)
{
	unsigned char len8[8];
	uint64_t n = 0;
	struct stat sb;
	char *text = NULL;
	cow_status_t st;

	if ((f->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return io_error("open", path);
	if (fstat(f->fd, &sb) != 0)
		return io_error("fstat", path);
	if (!S_ISREG(sb.st_mode))
		return cow__error(COW_EIO, "\"%s\" is "
		    "not a regular file", path);
	f->file_size = (uint64_t)sb.st_size;
	if (f->file_size < 8)
		return format_error(path, "the file is %llu bytes, shorter "
		    "than the 8-byte header length",
		    (unsigned long long)f->file_size);
	if (pread_all(f->fd, len8, 8, 0) != 8)
		return io_error("pread", path);
	for (int i = 7; i >= 0; i--)
		n = n << 8 | len8[i];
	if (n > COW__ST_MAX_HEADER)
		return format_error(path, "header length %llu is above the "
		    "limit of %llu", (unsigned long long)n,
		    (unsigned long long)COW__ST_MAX_HEADER);
	if (8 + n > f->file_size)
		return format_error(path, "header length %llu: 8 + %llu bytes "
		    "is past the end of the file (%llu bytes)",
		    (unsigned long long)n, (unsigned long long)n,
		    (unsigned long long)f->file_size);
	f->data_start = 8 + n;
	if ((flags & COW_SAFETENSORS_PREAD) == 0) {
		if ((f->map = cow__alloc(cow_allocator_default(),
		    sizeof *f->map)) == NULL)
			return COW_ENOMEM;
		f->map->len = (size_t)f->file_size;
		f->map->addr = mmap(NULL, f->map->len, PROT_READ, MAP_PRIVATE,
		    f->fd, 0);
		if (f->map->addr == MAP_FAILED) {
			st = io_error("mmap", path);
			cow__free(cow_allocator_default(), f->map,
			    sizeof *f->map);
			f->map = NULL;
			return st;
		}
		cow__ref_init(&f->map->refs, 1);
		close(f->fd);
		f->fd = -1;
		return index_header(f, (const char *)f->map->addr + 8,
		    (size_t)n, path);
	}
	if (n > 0 && (text = cow__alloc(cow_allocator_default(),
	    (size_t)n)) == NULL)
		return COW_ENOMEM;
	if (n > 0 && pread_all(f->fd, text, (size_t)n, 8) != (ssize_t)n)
		st = io_error("pread", path);
	else /* (an empty header has no buffer: "" for the cursor) */
		st = index_header(f, n > 0 ? text : "", (size_t)n, path);
	cow__free(cow_allocator_default(), text, (size_t)n);
	return st;
}

cow_status_t
cow_safetensors_open(const char *path, unsigned flags,
    cow_safetensors_t **out)
{
	cow_safetensors_t *f;
	cow_status_t st;

	COW__RETURN_IF_NULL(path);
	COW__RETURN_IF_NULL(out);
	if ((flags & ~(unsigned)COW_SAFETENSORS_PREAD) != 0)
		return COW__NAMED(cow__error(COW_EINVAL, "unknown flags 0x%x",
		    flags & ~(unsigned)COW_SAFETENSORS_PREAD));
	if ((f = cow__alloc(cow_allocator_default(), sizeof *f)) ==
	    NULL)
		return COW__NAMED(COW_ENOMEM);
	memset(f, 0, sizeof *f);
	f->fd = -1;
	if ((st = open_file(f, path, flags)) != COW_OK) {
		cow_safetensors_close(f);
		return COW__NAMED(st);
	}
	*out = f;
	return COW_OK;
}

void
cow_safetensors_close(cow_safetensors_t *f)
{
	if (f == NULL)
		return;
	if (f->fd >= 0)
		close(f->fd);
	map_unref(f->map);
	file_free(f);
}

/* ------------------------------------------------------------------ */
/* The index. */

static const struct st_tensor *
tensor_at(const cow_safetensors_t *f, size_t i)
{
	return f != NULL && i < f->count ? &f->tensors[i] : NULL;
}

size_t
cow_safetensors_count(const cow_safetensors_t *f)
{
	return f == NULL ? 0 : f->count;
}

COW__ENTRY_ACCESSORS(cow_safetensors_t, struct st_tensor, tensor_at,
    cow_safetensors_name, cow_safetensors_dtype, cow_safetensors_ndim,
    cow_safetensors_sizes, cow_safetensors_nbytes)

cow_status_t
cow_safetensors_find(const cow_safetensors_t *f, const char *name,
    size_t *index)
{
	COW__RETURN_IF_NULL(f);
	COW__RETURN_IF_NULL(name);
	COW__RETURN_IF_NULL(index);
	for (size_t i = 0; i < f->count; i++)
		if (strcmp(f->tensors[i].name, name) == 0) {
			*index = i;
			return COW_OK;
		}
	return COW__NAMED(cow__error(COW_ERANGE, "no tensor named \"%s\"",
	    name));
}

size_t
cow_safetensors_metadata_count(const cow_safetensors_t *f)
{
	return f == NULL ? 0 : f->meta_count;
}

const char *
cow_safetensors_metadata_key(const cow_safetensors_t *f, size_t i)
{
	return f != NULL && i < f->meta_count ? f->meta[i].key : NULL;
}

const char *
cow_safetensors_metadata_value(const cow_safetensors_t *f, size_t i)
{
	return f != NULL && i < f->meta_count ? f->meta[i].value : NULL;
}

const char *
cow_safetensors_metadata_get(const cow_safetensors_t *f, const char *key)
{
	if (f == NULL || key == NULL)
		return NULL;
	for (size_t i = 0; i < f->meta_count; i++)
		if (strcmp(f->meta[i].key, key) == 0)
			return f->meta[i].value;
	return NULL;
}

void
cow_safetensors_stats(const cow_safetensors_t *f,
    cow_safetensors_stats_t *out)
{
	if (f == NULL || out == NULL)
		return;
	out->tensors = cow__atomic_load_relaxed(&f->made);
	out->unaligned_copies = cow__atomic_load_relaxed(&f->unaligned);
	out->bytes_read = cow__atomic_load_relaxed(&f->bytes_read);
	out->mapped_bytes = f->map != NULL ? f->map->len : 0;
}

/* ------------------------------------------------------------------ */
/* Tensors. */

/* The alignment a tensor's data needs (tensor.h: half the element for
 * complex dtypes). */
static size_t
data_alignment(cow_dtype_t dtype)
{
	size_t k = cow_dtype_size(dtype);

	return dtype == COW_DTYPE_COMPLEX64 ? k / 2 : k;
}

static cow_status_t
get_pread(cow_safetensors_t *f, const struct st_tensor *t,
    cow_tensor_t **out)
{
	cow_tensor_t *x;
	void *p;
	cow_status_t st;

	if ((st = cow_tensor_empty(t->dtype, t->ndim, t->sizes, NULL, &x)) !=
	    COW_OK)
		return cow__error_wrap(st, "");
	if (t->nbytes > 0) {
		ssize_t r;

		if ((st = cow_tensor_mutable_data(x, &p)) != COW_OK) {
			cow_tensor_release(x);
			return cow__error_wrap(st, "");
		}
		r = pread_all(f->fd, p, (size_t)t->nbytes,
		    f->data_start + t->begin);
		if (r != (ssize_t)t->nbytes) {
			int err = r < 0 ? errno : EIO;

			cow_tensor_release(x);
			return cow__error(COW_EIO,
			    "pread of tensor \"%s\" (%llu bytes at %llu): %s",
			    t->name, (unsigned long long)t->nbytes,
			    (unsigned long long)(f->data_start + t->begin),
			    r < 0 ? strerror(err) : "the file is shorter");
		}
		cow__atomic_add_relaxed(&f->bytes_read, t->nbytes);
	}
	*out = x;
	return COW_OK;
}

/* Not aligned for its dtype in the mapping: an aligned copy, counted. */
static cow_status_t
get_unaligned(cow_safetensors_t *f, const struct st_tensor *t,
    const char *data, cow_tensor_t **out)
{
	cow_status_t st = cow_tensor_from_data(t->dtype, t->ndim, t->sizes,
	    data, NULL, out);

	if (st == COW_OK) {
		cow__atomic_add_relaxed(&f->unaligned, 1);
		cow__atomic_add_relaxed(&f->bytes_read, t->nbytes);
	}
	return st;
}

/* Read-only external memory over the mapping, which it keeps alive. */
static cow_status_t
get_mapped(cow_safetensors_t *f, const struct st_tensor *t, char *data,
    cow_tensor_t **out)
{
	cow_status_t st;

	cow__ref_get(&f->map->refs);
	st = cow_tensor_from_external(data, t->dtype, t->ndim, t->sizes, NULL,
	    0, map_deleter, f->map, COW_STORAGE_READ_ONLY, NULL, out);
	if (st != COW_OK) /* the deleter was not called */
		map_unref(f->map);
	return st;
}

cow_status_t
cow_safetensors_get(cow_safetensors_t *f, size_t i, cow_tensor_t **out)
{
	const struct st_tensor *t;
	char *data;
	cow_status_t st;

	COW__RETURN_IF_NULL(f);
	COW__RETURN_IF_NULL(out);
	if ((t = tensor_at(f, i)) == NULL)
		return COW__NAMED(cow__error(COW_ERANGE, "tensor %zu of a file "
		    "of %zu", i, f->count));
	if (f->map == NULL) {
		if ((st = get_pread(f, t, out)) != COW_OK)
			return COW__NAMED(st);
	} else {
		if (t->nbytes == 0)
			st = cow_tensor_empty(t->dtype, t->ndim, t->sizes, NULL,
			    out);
		else if ((uintptr_t)(data = (char *)f->map->addr +
		    f->data_start + t->begin) % data_alignment(t->dtype) != 0)
			st = get_unaligned(f, t, data, out);
		else
			st = get_mapped(f, t, data, out);
		if (st != COW_OK)
			return COW__NAMED(cow__error_wrap(st, ""));
	}
	cow__atomic_add_relaxed(&f->made, 1);
	return COW_OK;
}
