/*
 * safetensors files (include/cowstore/safetensors.h, docs/files.md), saved
 * and loaded by cowstore: round trips of every dtype, shape and view, names
 * and metadata past ASCII, both save modes, on the caller's thread and as a
 * job; what a save refuses; loading with no copy (a write copies that
 * tensor alone, lazy clones share the mapping, the mapping goes with its
 * last user, a replaced file leaves loaded tensors intact, the pread mode);
 * saves that fail (a missing directory, cancellation, a busy or released
 * snapshot) keep the destination and the snapshot.
 *
 * Expected values are walked from the tensors' storages by the test
 * (st_test.h), not gathered by the library. tests/files/ checks the files
 * against an independent reader and writer, each rule of the format, and
 * full or read-only file systems.
 */
#define _DEFAULT_SOURCE /* mkdtemp, realpath */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include <criterion/criterion.h>

#include "cow_test.h"
#include "leak_fixture.h"
#include "st_test.h"

static char *dir;
static char path[PATH_MAX];

static void
st_setup(void)
{
	leak_setup();
	dir = st_test_tmpdir();
	cr_assert_not_null(dir, "mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
}

static void
st_teardown(void)
{
	st_test_rmdir(dir);
	leak_teardown();
}

TestSuite(safetensors, .init = st_setup, .fini = st_teardown,
    .timeout = 120.0);

#define OK(call) do {							\
	cow_status_t st_ = (call);					\
	cr_assert_eq(st_, COW_OK, "%s: %s: %s", #call,			\
	    cow_status_str(st_), cow_last_error());			\
} while (0)

static const cow_snapshot_save_mode_t modes[2] = {
	COW_SNAPSHOT_STREAM, COW_SNAPSHOT_PERSIST_FIRST
};

static const char *
mode_name(cow_snapshot_save_mode_t m)
{
	return m == COW_SNAPSHOT_STREAM ? "stream" : "persist-first";
}

/* A new tensor of @dtype and shape filled with pattern @seed (booleans
 * 0 or 1). */
static cow_tensor_t *
patterned(cow_dtype_t dtype, int ndim, const int64_t *sizes, unsigned seed)
{
	cow_tensor_t *t;
	void *p;

	OK(cow_tensor_empty(dtype, ndim, sizes, NULL, &t));
	if (cow_tensor_numel(t) == 0)
		return t;
	OK(cow_tensor_mutable_data(t, &p));
	cow_test_fill(p, cow_tensor_nbytes(t), seed);
	if (dtype == COW_DTYPE_BOOL)
		for (size_t i = 0; i < cow_tensor_nbytes(t); i++)
			((unsigned char *)p)[i] &= 1;
	return t;
}

/* The file @f holds @t under @name: dtype, shape, and @t's elements in C
 * order (walked over @t's storage by the test). */
static void
expect_tensor(cow_safetensors_t *f, const char *name, const cow_tensor_t *t)
{
	cow_tensor_t *g;
	const void *p;
	void *want;
	size_t i, n;

	OK(cow_safetensors_find(f, name, &i));
	cr_assert_eq(cow_safetensors_dtype(f, i), cow_tensor_dtype(t), "%s",
	    name);
	cr_assert_eq(cow_safetensors_ndim(f, i), cow_tensor_ndim(t), "%s",
	    name);
	for (int d = 0; d < cow_tensor_ndim(t); d++)
		cr_assert_eq(cow_safetensors_sizes(f, i)[d],
		    cow_tensor_sizes(t)[d], "%s: size %d", name, d);
	want = st_test_tensor_bytes(t, &n);
	cr_assert_eq(cow_safetensors_nbytes(f, i), n, "%s: nbytes", name);
	OK(cow_safetensors_get(f, i, &g));
	cr_assert(cow_tensor_is_contiguous(g), "%s", name);
	OK(cow_tensor_read_data(g, &p));
	cr_assert(n == 0 || memcmp(p, want, n) == 0, "%s: values differ",
	    name);
	free(want);
	cow_tensor_release(g);
}

/* Open @p both ways and check every tensor of @ts under @names. */
static void
expect_file(const char *p, size_t n, cow_tensor_t *const *ts,
    const char *const *names)
{
	for (int pread_mode = 0; pread_mode < 2; pread_mode++) {
		cow_safetensors_t *f;
		cow_safetensors_stats_t s;

		OK(cow_safetensors_open(p, pread_mode ? COW_SAFETENSORS_PREAD :
		    0, &f));
		cr_assert_eq(cow_safetensors_count(f), n);
		for (size_t i = 0; i < n; i++)
			expect_tensor(f, names[i], ts[i]);
		cow_safetensors_stats(f, &s);
		cr_assert_eq(s.tensors, n);
		cr_assert_eq(s.unaligned_copies, 0, "a file cowstore wrote "
		    "needs no aligned copy");
		cow_safetensors_close(f);
	}
}

/* The header length is a multiple of 8 and the file is exactly the
 * header and the tensors' bytes. */
static void
expect_layout(const char *p, uint64_t data_bytes)
{
	unsigned char *b;
	size_t n;
	uint64_t h = 0;

	cr_assert_not_null(b = st_test_read(p, &n));
	cr_assert_geq(n, 8);
	for (int i = 7; i >= 0; i--)
		h = h << 8 | b[i];
	cr_assert_eq(h % 8, 0, "header length %llu", (unsigned long long)h);
	cr_assert_eq(n, 8 + h + data_bytes);
	cr_assert_eq(b[8], '{');
	for (uint64_t i = 8 + h - 1; b[i] != '}'; i--)
		cr_assert_eq(b[i], ' ', "the header is padded with spaces");
	free(b);
}

static void
release_all(cow_tensor_t **ts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cow_tensor_release(ts[i]);
}

/* ------------------------------------------------------------------ */
/* Round trips. */

#define NSHAPES 7
static const int shape_ndim[NSHAPES] = {0, 1, 3, 1, 2, 3, 4};
static const int64_t shape_sizes[NSHAPES][4] = {
	{0}, {0}, {3, 0, 2}, {5}, {2, 3}, {2, 3, 4}, {2, 1, 3, 2}
};

Test(safetensors, every_dtype_and_shape_round_trips)
{
	enum { N = (COW_DTYPE_COUNT - 1) * NSHAPES };
	cow_tensor_t *ts[N];
	char buf[N][40];
	const char *names[N];
	size_t n = 0;
	uint64_t bytes = 0;
	cow_snapshot_t *snap;

	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		if (d == COW_DTYPE_COMPLEX128)
			continue;
		for (int s = 0; s < NSHAPES; s++) {
			snprintf(buf[n], sizeof buf[n], "%s/%d",
			    cow_dtype_name((cow_dtype_t)d), s);
			names[n] = buf[n];
			ts[n] = patterned((cow_dtype_t)d, shape_ndim[s],
			    shape_sizes[s], (unsigned)n);
			bytes += (uint64_t)cow_tensor_nbytes(ts[n]);
			n++;
		}
	}
	OK(cow_snapshot_take(n, ts, names, &snap));
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_save_t opts = {.mode = modes[m]};

			OK(st_test_save(snap, path, &opts, job));
			expect_layout(path, bytes);
			expect_file(path, n, ts, names);
			cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"),
			    0);
			/* The save released the snapshot's tensors: take a
			 * new one for the next. */
			cow_snapshot_release(snap);
			OK(cow_snapshot_take(n, ts, names, &snap));
		}
	cow_snapshot_release(snap);
	release_all(ts, n);
}

/* Views of one storage, each written in C order: the base, transposed,
 * narrowed, stepped, expanded (stride 0), permuted 4-d, a diagonal, a
 * selected row and a selected element (0-d), and an empty narrow; in
 * dtypes of 1, 2, 4 and 8 bytes. */
Test(safetensors, views_round_trip_in_c_order)
{
	static const cow_dtype_t dts[] = {COW_DTYPE_BOOL, COW_DTYPE_BFLOAT16,
	    COW_DTYPE_UINT16, COW_DTYPE_FLOAT32, COW_DTYPE_COMPLEX64,
	    COW_DTYPE_INT64};
	enum { PER = 12, N = 6 * PER };
	cow_tensor_t *ts[N];
	char buf[N][40];
	const char *names[N];
	size_t n = 0;
	cow_snapshot_t *snap;

	for (size_t k = 0; k < sizeof dts / sizeof *dts; k++) {
		const int64_t s2[2] = {4, 6}, s4[4] = {2, 3, 4, 5};
		const int64_t e[2] = {3, 6};
		const int perm[4] = {3, 0, 2, 1};
		cow_tensor_t *b2 = patterned(dts[k], 2, s2, 7u + (unsigned)k);
		cow_tensor_t *b4 = patterned(dts[k], 4, s4, 9u + (unsigned)k);
		cow_tensor_t *row, *tmp;
		size_t first = n;

		ts[n++] = b2;
		OK(cow_tensor_transpose(b2, 0, 1, &ts[n++]));
		OK(cow_tensor_narrow(b2, 1, 1, 3, &ts[n++]));
		OK(cow_tensor_slice(b2, 0, 0, 4, 2, &tmp));
		OK(cow_tensor_slice(tmp, 1, 1, 6, 2, &ts[n++]));
		cow_tensor_release(tmp);
		OK(cow_tensor_narrow(b2, 0, 2, 1, &row));
		OK(cow_tensor_expand(row, 2, e, &ts[n++]));
		cow_tensor_release(row);
		OK(cow_tensor_permute(b4, 4, perm, &ts[n++]));
		OK(cow_tensor_diagonal(b2, 1, 0, 1, &ts[n++]));
		OK(cow_tensor_select(b2, 0, 3, &ts[n++]));
		OK(cow_tensor_select(ts[n - 1], 0, 5, &ts[n]));
		n++;
		OK(cow_tensor_narrow(b2, 1, 2, 0, &ts[n++]));
		ts[n++] = b4;
		OK(cow_tensor_narrow(b4, 3, 1, 3, &ts[n++]));
		cr_assert_eq(n - first, PER);
		for (size_t i = first; i < n; i++) {
			snprintf(buf[i], sizeof buf[i], "%s.view%zu",
			    cow_dtype_name(dts[k]), i - first);
			names[i] = buf[i];
		}
		cr_assert(!cow_tensor_is_contiguous(ts[first + 1]));
		cr_assert_eq(cow_tensor_ndim(ts[first + 8]), 0);
		cr_assert_eq(cow_tensor_numel(ts[first + 9]), 0);
	}
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_save_t opts = {.mode = modes[m]};
			cow_safetensors_t *f;
			cow_safetensors_stats_t s;

			OK(cow_snapshot_take(n, ts, names, &snap));
			OK(st_test_save(snap, path, &opts, job));
			cow_snapshot_release(snap);
			expect_file(path, n, ts, names);
			/* Mapped with no copy, each aligned in the mapping. */
			OK(cow_safetensors_open(path, 0, &f));
			for (size_t i = 0; i < n; i++) {
				cow_tensor_t *g;
				const void *p;

				OK(cow_safetensors_get(f, i, &g));
				p = cow_tensor_const_data(g);
				if (cow_tensor_numel(g) > 0) {
					cr_assert(st_test_in_mapping(path, p,
					    cow_tensor_nbytes(g)), "%s",
					    cow_safetensors_name(f, i));
					cr_assert_eq((uintptr_t)p %
					    cow_dtype_size(cow_tensor_dtype(g)),
					    0);
				}
				cow_tensor_release(g);
			}
			cow_safetensors_stats(f, &s);
			cr_assert_eq(s.unaligned_copies, 0);
			cr_assert_eq(s.bytes_read, 0);
			cow_safetensors_close(f);
		}
	release_all(ts, n);
}

/* A file of 0-d tensors only (no dimension anywhere in the header). */
Test(safetensors, scalars_only_round_trip)
{
	cow_tensor_t *ts[3];
	const char *names[3] = {"s.f64", "s.u8", "s.bf16"};
	cow_snapshot_t *snap;

	ts[0] = patterned(COW_DTYPE_FLOAT64, 0, NULL, 1);
	ts[1] = patterned(COW_DTYPE_UINT8, 0, NULL, 2);
	ts[2] = patterned(COW_DTYPE_BFLOAT16, 0, NULL, 3);
	OK(cow_snapshot_take(3, ts, names, &snap));
	OK(cow_safetensors_save(snap, path, NULL));
	cow_snapshot_release(snap);
	expect_file(path, 3, ts, names);
	release_all(ts, 3);
}

/* No tensor: the header "{}" (and metadata), padded. */
Test(safetensors, empty_snapshot_round_trips)
{
	const char *k[1] = {"only"}, *v[1] = {"metadata"};
	cow_safetensors_save_t opts = {.metadata_count = 1, .metadata_keys = k,
	    .metadata_values = v};
	cow_snapshot_t *snap;
	cow_safetensors_t *f;

	OK(cow_snapshot_take(0, NULL, NULL, &snap));
	OK(cow_safetensors_save(snap, path, NULL));
	expect_layout(path, 0);
	OK(cow_safetensors_open(path, 0, &f));
	cr_assert_eq(cow_safetensors_count(f), 0);
	cr_assert_eq(cow_safetensors_metadata_count(f), 0);
	cow_safetensors_close(f);
	OK(cow_safetensors_save(snap, path, &opts));
	OK(cow_safetensors_open(path, COW_SAFETENSORS_PREAD, &f));
	cr_assert_eq(cow_safetensors_count(f), 0);
	cr_assert_str_eq(cow_safetensors_metadata_get(f, "only"), "metadata");
	cow_safetensors_close(f);
	cow_snapshot_release(snap);
}

/* Names and metadata past ASCII and with characters JSON escapes
 * (quotes, backslashes, control characters, DEL, a 4-byte character). */
Test(safetensors, names_and_metadata_past_ascii_round_trip)
{
	static const char *const names[] = {"caf\xc3\xa9.\xc3\xbc",
	    "\xe6\x97\xa5\xe6\x9c\xac", "emoji\xf0\x9f\x98\x80",
	    "quote\"back\\slash", "ctl\n\t\x01\x1f", "del\x7f", "a/b"};
	static const char *const keys[] = {"format", "caf\xc3\xa9",
	    "q\"uote", "ctl", "emoji", "empty"};
	static const char *const values[] = {"pt",
	    "\303\274ber \xe6\x97\xa5", "back\\slash\n", "\x01\x1f\t",
	    "\xf0\x9f\x98\x80", ""};
	enum { N = sizeof names / sizeof *names, M = sizeof keys / sizeof *keys };
	cow_tensor_t *ts[N];
	cow_snapshot_t *snap;
	cow_safetensors_save_t opts = {.metadata_count = M,
	    .metadata_keys = keys, .metadata_values = values};

	for (size_t i = 0; i < N; i++)
		ts[i] = patterned(COW_DTYPE_INT32, 1, &(int64_t){3},
		    (unsigned)i);
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_t *f;

			opts.mode = modes[m];
			OK(cow_snapshot_take(N, ts, names, &snap));
			OK(st_test_save(snap, path, &opts, job));
			cow_snapshot_release(snap);
			expect_file(path, N, ts, names);
			OK(cow_safetensors_open(path, 0, &f));
			cr_assert_eq(cow_safetensors_metadata_count(f), M);
			for (size_t i = 0; i < M; i++) {
				cr_assert_str_eq(cow_safetensors_metadata_key(f,
				    i), keys[i]);
				cr_assert_str_eq(cow_safetensors_metadata_value(
				    f, i), values[i]);
				cr_assert_str_eq(cow_safetensors_metadata_get(f,
				    keys[i]), values[i]);
			}
			cr_assert_null(cow_safetensors_metadata_get(f, "nope"));
			cow_safetensors_close(f);
		}
	release_all(ts, N);
}

/* ------------------------------------------------------------------ */
/* What a save refuses: nothing is written, the snapshot is as it was. */

/* @snap's save to @path fails with @want and a message holding @phrase,
 * in both modes, on this thread and as a job; no file appears, no
 * temporary file is left, every tensor is still held. */
static void
expect_refused(cow_snapshot_t *snap, const cow_safetensors_save_t *base,
    cow_status_t want, const char *phrase)
{
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_save_t opts = *base;
			cow_status_t st;

			opts.mode = modes[m];
			st = st_test_save(snap, path, &opts, job);
			cr_assert_eq(st, want, "%s %s: %s (%s), expected %s",
			    mode_name(modes[m]), job ? "job" : "sync",
			    cow_status_str(st), cow_last_error(),
			    cow_status_str(want));
			cr_assert(strstr(cow_last_error(), phrase) != NULL,
			    "\"%s\" lacks \"%s\"", cow_last_error(), phrase);
			cr_assert(access(path, F_OK) != 0 && errno == ENOENT,
			    "a file was made");
			cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"),
			    0);
			for (size_t i = 0; i < cow_snapshot_count(snap); i++)
				cr_assert(cow_snapshot_is_held(snap, i));
		}
}

Test(safetensors, complex128_is_refused_naming_the_tensor)
{
	cow_tensor_t *ts[2];
	const char *names[2] = {"fine", "z.c128"};
	cow_safetensors_save_t opts = {0};
	cow_snapshot_t *snap;

	ts[0] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){4}, 1);
	ts[1] = patterned(COW_DTYPE_COMPLEX128, 1, &(int64_t){4}, 2);
	OK(cow_snapshot_take(2, ts, names, &snap));
	expect_refused(snap, &opts, COW_EINVAL,
	    "tensor 1 (\"z.c128\") is complex128, which safetensors has no "
	    "code for");
	cow_snapshot_release(snap);
	release_all(ts, 2);
}

Test(safetensors, empty_reserved_and_duplicate_names_are_refused)
{
	static const struct {
		const char *names[2];
		const char *phrase;
	} cases[] = {
		{{"a", ""}, "tensor 1 is named \"\", which a safetensors file "
		    "cannot hold"},
		{{"__metadata__", "a"}, "tensor 0 is named \"__metadata__\", "
		    "which a safetensors file cannot hold"},
		{{"w", "w"}, "two tensors are named \"w\""},
	};
	cow_tensor_t *ts[2];
	cow_safetensors_save_t opts = {0};

	ts[0] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){4}, 1);
	ts[1] = patterned(COW_DTYPE_INT8, 1, &(int64_t){4}, 2);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		cow_snapshot_t *snap;

		OK(cow_snapshot_take(2, ts, cases[c].names, &snap));
		expect_refused(snap, &opts, COW_EINVAL, cases[c].phrase);
		cow_snapshot_release(snap);
	}
	release_all(ts, 2);
}

/* Bad UTF-8 (a stray byte, an overlong form, a surrogate, a truncated
 * sequence, a code point past U+10FFFF) in a name, a metadata key or a
 * metadata value; each message gives the first bad byte. */
Test(safetensors, bad_utf8_is_refused)
{
	static const struct {
		const char *s;
		size_t bad;
	} bad[] = {{"\xff", 0}, {"a\xc0\xaf", 1}, {"ab\xed\xa0\x80", 2},
	    {"abc\xe6\x97", 3}, {"\xf4\x90\x80\x80", 0}, {"ok\x80", 2}};
	cow_tensor_t *t = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){4}, 1);

	for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
		const char *names[1] = {bad[c].s}, *good[1] = {"t"};
		const char *k[1] = {bad[c].s}, *v[1] = {"v"};
		const char *k2[1] = {"k"}, *v2[1] = {bad[c].s};
		cow_safetensors_save_t none = {0};
		cow_safetensors_save_t inkey = {.metadata_count = 1,
		    .metadata_keys = k, .metadata_values = v};
		cow_safetensors_save_t invalue = {.metadata_count = 1,
		    .metadata_keys = k2, .metadata_values = v2};
		char phrase[80];
		cow_snapshot_t *snap;

		OK(cow_snapshot_take(1, &t, names, &snap));
		snprintf(phrase, sizeof phrase, "tensor name 0 is not valid "
		    "UTF-8 (byte %zu)", bad[c].bad);
		expect_refused(snap, &none, COW_EINVAL, phrase);
		cow_snapshot_release(snap);
		OK(cow_snapshot_take(1, &t, good, &snap));
		snprintf(phrase, sizeof phrase, "metadata key 0 is not valid "
		    "UTF-8 (byte %zu)", bad[c].bad);
		expect_refused(snap, &inkey, COW_EINVAL, phrase);
		snprintf(phrase, sizeof phrase, "metadata value 0 is not valid "
		    "UTF-8 (byte %zu)", bad[c].bad);
		expect_refused(snap, &invalue, COW_EINVAL, phrase);
		cow_snapshot_release(snap);
	}
	cow_tensor_release(t);
}

Test(safetensors, bad_metadata_and_options_are_refused)
{
	const char *names[1] = {"t"};
	const char *k[2] = {"k", "k"}, *v[2] = {"v", "w"};
	const char *kn[1] = {NULL}, *vn[1] = {"v"};
	cow_safetensors_save_t dup = {.metadata_count = 2, .metadata_keys = k,
	    .metadata_values = v};
	cow_safetensors_save_t nul = {.metadata_count = 1,
	    .metadata_keys = kn, .metadata_values = vn};
	cow_safetensors_save_t nokeys = {.metadata_count = 1,
	    .metadata_values = vn};
	cow_safetensors_save_t badmode = {.mode = 7};
	cow_tensor_t *t = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){4}, 1);
	cow_snapshot_job_t *job;
	cow_snapshot_t *snap;

	OK(cow_snapshot_take(1, &t, names, &snap));
	expect_refused(snap, &dup, COW_EINVAL, "duplicate metadata key \"k\"");
	expect_refused(snap, &nul, COW_EINVAL, "metadata pair 0 has a NULL "
	    "string");
	expect_refused(snap, &nokeys, COW_EINVAL, "metadata_keys is NULL for "
	    "1 pairs");
	cr_assert_eq(cow_safetensors_save(snap, path, &badmode), COW_EINVAL);
	cr_assert(strstr(cow_last_error(), "unknown save mode 7") != NULL);
	cr_assert_eq(cow_safetensors_save(NULL, path, NULL), COW_EINVAL);
	cr_assert_eq(cow_safetensors_save(snap, NULL, NULL), COW_EINVAL);
	cr_assert_eq(cow_safetensors_save_start(snap, path, NULL, NULL),
	    COW_EINVAL);
	cr_assert_eq(cow_safetensors_save_start(snap, path, &badmode, &job),
	    COW_EINVAL);
	cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"), 0);
	cow_snapshot_release(snap);
	cow_tensor_release(t);
}

/* A tensor released before the save: COW_ERELEASED, naming it. */
Test(safetensors, released_tensor_is_refused_naming_it)
{
	cow_tensor_t *ts[2];
	const char *names[2] = {"kept", "gone"};
	cow_snapshot_t *snap;

	ts[0] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){4}, 1);
	ts[1] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){4}, 2);
	OK(cow_snapshot_take(2, ts, names, &snap));
	OK(cow_snapshot_release_tensor(snap, 1));
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_save_t opts = {.mode = modes[m]};

			cr_assert_eq(st_test_save(snap, path, &opts, job),
			    COW_ERELEASED);
			cr_assert(strstr(cow_last_error(), "tensor 1 (\"gone\") "
			    "was released before the save") != NULL, "%s",
			    cow_last_error());
			cr_assert(access(path, F_OK) != 0);
			cr_assert_eq(st_test_leftovers(dir,
			    "ckpt.safetensors"), 0);
			cr_assert(cow_snapshot_is_held(snap, 0));
		}
	cow_snapshot_release(snap);
	release_all(ts, 2);
}

/* ------------------------------------------------------------------ */
/* Loading with no copy. */

/* A file of four tensors: a (F32 [1000]), b (F32 [300]), c (I64 [50]),
 * d (U8 [4096]), patterns 1..4. */
static const char *const four_names[4] = {"a", "b", "c", "d"};

static void
save_four(const char *p, cow_tensor_t **ts)
{
	cow_snapshot_t *snap;

	ts[0] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){1000}, 1);
	ts[1] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){300}, 2);
	ts[2] = patterned(COW_DTYPE_INT64, 1, &(int64_t){50}, 3);
	ts[3] = patterned(COW_DTYPE_UINT8, 1, &(int64_t){4096}, 4);
	OK(cow_snapshot_take(4, ts, four_names, &snap));
	OK(cow_safetensors_save(snap, p, NULL));
	cow_snapshot_release(snap);
}

static cow_tensor_t *
get_named(cow_safetensors_t *f, const char *name)
{
	cow_tensor_t *t;
	size_t i;

	OK(cow_safetensors_find(f, name, &i));
	OK(cow_safetensors_get(f, i, &t));
	return t;
}

Test(safetensors, a_write_copies_that_tensor_alone)
{
	cow_tensor_t *src[4], *t[4];
	cow_safetensors_t *f;
	const void *before[4];
	unsigned char *file0, *file1;
	size_t n0, n1;
	double v;
	cow_stats_t s;

	save_four(path, src);
	file0 = st_test_read(path, &n0);
	OK(cow_safetensors_open(path, 0, &f));
	for (int i = 0; i < 4; i++) {
		t[i] = get_named(f, four_names[i]);
		before[i] = cow_tensor_const_data(t[i]);
		cr_assert(st_test_in_mapping(path, before[i],
		    cow_tensor_nbytes(t[i])), "%s over the mapping",
		    four_names[i]);
		cr_assert(cow_storage_is_read_only(cow_tensor_storage(t[i])));
	}
	cow_stats_reset();
	OK(cow_tensor_set_f64(t[1], (int64_t[]){7}, 42.0));
	s = cow_test_stats();
	cr_assert_eq(s.materialize_copies, 1);
	cr_assert_eq(s.external_copies, 1);
	cr_assert_eq(s.materialize_steals, 0);
	cr_assert_eq(s.bytes_copied, 300 * 4, "copied %llu bytes: b's 1200 "
	    "alone", (unsigned long long)s.bytes_copied);
	/* b moved out of the mapping; its neighbours did not. */
	cr_assert(!st_test_in_mapping(path, cow_tensor_const_data(t[1]), 1));
	for (int i = 0; i < 4; i++)
		if (i != 1)
			cr_assert_eq(cow_tensor_const_data(t[i]), before[i]);
	/* b: its values and the one written. */
	OK(cow_tensor_get_f64(t[1], (int64_t[]){7}, &v));
	cr_assert_eq(v, 42.0);
	cr_assert_eq(memcmp(cow_tensor_const_data(t[1]),
	    cow_tensor_const_data(src[1]), 7 * 4), 0);
	cr_assert_eq(memcmp((const float *)cow_tensor_const_data(t[1]) + 8,
	    (const float *)cow_tensor_const_data(src[1]) + 8, 292 * 4), 0);
	/* A second write copies nothing more. */
	OK(cow_tensor_set_f64(t[1], (int64_t[]){8}, 43.0));
	cr_assert_eq(cow_test_stats().materialize_copies, 1);
	/* The file and the mapping are untouched: a new get reads b as it
	 * was, and so does the file on disk. */
	{
		cow_tensor_t *again = get_named(f, "b");

		cr_assert_eq(cow_tensor_const_data(again), before[1]);
		cr_assert_eq(memcmp(before[1], cow_tensor_const_data(src[1]),
		    1200), 0);
		cow_tensor_release(again);
	}
	file1 = st_test_read(path, &n1);
	cr_assert(n0 == n1 && memcmp(file0, file1, n0) == 0);
	free(file0);
	free(file1);
	cow_safetensors_close(f);
	release_all(t, 4);
	release_all(src, 4);
}

Test(safetensors, lazy_clones_share_the_mapping)
{
	cow_tensor_t *src[4], *a, *c1, *c2;
	cow_safetensors_t *f;
	const void *p;

	save_four(path, src);
	OK(cow_safetensors_open(path, 0, &f));
	a = get_named(f, "a");
	p = cow_tensor_const_data(a);
	cow_stats_reset();
	OK(cow_tensor_lazy_clone(a, &c1));
	OK(cow_tensor_lazy_clone(c1, &c2));
	cr_assert_eq(cow_tensor_const_data(c1), p);
	cr_assert_eq(cow_tensor_const_data(c2), p);
	cr_assert(cow_storage_shares_data(cow_tensor_storage(a),
	    cow_tensor_storage(c2)));
	cr_assert_eq(cow_test_stats().bytes_copied, 0);
	/* A write to one clone copies it; the others stay on the mapping. */
	OK(cow_tensor_set_f64(c1, (int64_t[]){0}, -1.0));
	cr_assert_eq(cow_test_stats().bytes_copied, 4000);
	cr_assert_neq(cow_tensor_const_data(c1), p);
	cr_assert_eq(cow_tensor_const_data(a), p);
	cr_assert_eq(cow_tensor_const_data(c2), p);
	cow_tensor_release(c1);
	/* The last two: each write still copies (the mapping is read-only
	 * memory the storages may not write). */
	OK(cow_tensor_set_f64(c2, (int64_t[]){0}, -2.0));
	cow_tensor_release(c2);
	OK(cow_tensor_set_f64(a, (int64_t[]){0}, -3.0));
	cr_assert_eq(cow_test_stats().external_copies, 3);
	cr_assert_eq(cow_test_stats().materialize_steals, 0);
	cr_assert(st_test_in_mapping(path, p, 4000), "the handle keeps it");
	cow_tensor_release(a);
	cow_safetensors_close(f);
	cr_assert_eq(st_test_mappings(path), 0);
	release_all(src, 4);
}

/* The mapping goes exactly when its last user does: the handle closed
 * first, or last. */
Test(safetensors, mapping_goes_with_its_last_user)
{
	cow_tensor_t *src[4], *x, *y, *xc;
	cow_safetensors_t *f;

	save_four(path, src);
	cr_assert_eq(st_test_mappings(path), 0);
	/* The handle first. */
	OK(cow_safetensors_open(path, 0, &f));
	cr_assert_geq(st_test_mappings(path), 1);
	x = get_named(f, "a");
	y = get_named(f, "d");
	OK(cow_tensor_lazy_clone(x, &xc));
	cow_safetensors_close(f);
	cr_assert_geq(st_test_mappings(path), 1, "closed with 3 users");
	cow_tensor_release(x);
	cr_assert_geq(st_test_mappings(path), 1, "2 users");
	cow_tensor_release(y);
	cr_assert_geq(st_test_mappings(path), 1, "the clone still uses it");
	cr_assert(cow_test_check(cow_tensor_const_data(xc), 4000, 1));
	cow_tensor_release(xc);
	cr_assert_eq(st_test_mappings(path), 0, "no user left");
	/* The handle last. */
	OK(cow_safetensors_open(path, 0, &f));
	x = get_named(f, "b");
	cow_tensor_release(x);
	cr_assert_geq(st_test_mappings(path), 1, "the handle still uses it");
	cow_safetensors_close(f);
	cr_assert_eq(st_test_mappings(path), 0);
	/* A tensor whose write copied it no longer holds the mapping. */
	OK(cow_safetensors_open(path, 0, &f));
	x = get_named(f, "b");
	OK(cow_tensor_set_f64(x, (int64_t[]){0}, 1.0));
	cow_safetensors_close(f);
	cr_assert_eq(st_test_mappings(path), 0, "a copied tensor let go");
	cow_tensor_release(x);
	release_all(src, 4);
}

/* A save over the path of a loaded file replaces it (rename): tensors and
 * the handle of the old file keep reading its bytes, mapped or with
 * pread; the path then holds the new file. */
Test(safetensors, replaced_file_leaves_loaded_tensors_intact)
{
	for (int m = 0; m < 2; m++)
		for (int pread_mode = 0; pread_mode < 2; pread_mode++) {
			cow_tensor_t *src[4], *old[4], *nt[2], *late;
			const char *names[2] = {"a", "new"};
			cow_safetensors_save_t opts = {.mode = modes[m]};
			cow_safetensors_t *f, *g;
			cow_snapshot_t *snap;
			struct st_test_id id0, id1;

			save_four(path, src);
			id0 = st_test_id(path);
			OK(cow_safetensors_open(path, pread_mode ?
			    COW_SAFETENSORS_PREAD : 0, &f));
			for (int i = 0; i < 4; i++)
				old[i] = get_named(f, four_names[i]);
			nt[0] = patterned(COW_DTYPE_FLOAT32, 1,
			    &(int64_t){1000}, 77);
			nt[1] = patterned(COW_DTYPE_INT16, 2,
			    (int64_t[]){3, 5}, 78);
			OK(cow_snapshot_take(2, nt, names, &snap));
			OK(st_test_save(snap, path, &opts, m == 1));
			cow_snapshot_release(snap);
			id1 = st_test_id(path);
			cr_assert(id0.ino != id1.ino, "a new file");
			if (!pread_mode)
				cr_assert_geq(st_test_mappings_of(path, true),
				    1, "the old file, unlinked, still mapped");
			for (int i = 0; i < 4; i++)
				cr_assert(cow_test_check(cow_tensor_const_data(
				    old[i]), cow_tensor_nbytes(old[i]),
				    (unsigned)i + 1), "%s", four_names[i]);
			late = get_named(f, "c");
			cr_assert(cow_test_check(cow_tensor_const_data(late),
			    400, 3), "a get after the replacement");
			cow_tensor_release(late);
			OK(cow_safetensors_open(path, 0, &g));
			cr_assert_eq(cow_safetensors_count(g), 2);
			expect_tensor(g, "a", nt[0]);
			expect_tensor(g, "new", nt[1]);
			cow_safetensors_close(g);
			cow_safetensors_close(f);
			release_all(old, 4);
			cr_assert_eq(st_test_mappings_of(path, true), 0);
			release_all(nt, 2);
			release_all(src, 4);
		}
}

/* COW_SAFETENSORS_PREAD: the same values, in private writable buffers
 * (a write copies nothing), nothing mapped. */
Test(safetensors, pread_mode_reads_private_buffers)
{
	cow_tensor_t *src[4], *t[4];
	cow_safetensors_t *f;
	cow_safetensors_stats_t s;
	const void *p;
	void *w;

	save_four(path, src);
	OK(cow_safetensors_open(path, COW_SAFETENSORS_PREAD, &f));
	cr_assert_eq(st_test_mappings(path), 0);
	cow_stats_reset();
	for (int i = 0; i < 4; i++) {
		t[i] = get_named(f, four_names[i]);
		cr_assert(!cow_storage_is_read_only(cow_tensor_storage(t[i])));
		cr_assert(cow_test_check(cow_tensor_const_data(t[i]),
		    cow_tensor_nbytes(t[i]), (unsigned)i + 1));
	}
	cr_assert_eq(st_test_mappings(path), 0);
	cow_safetensors_stats(f, &s);
	cr_assert_eq(s.mapped_bytes, 0);
	cr_assert_eq(s.tensors, 4);
	cr_assert_eq(s.bytes_read, 4000 + 1200 + 400 + 4096);
	cr_assert_eq(s.unaligned_copies, 0);
	p = cow_tensor_const_data(t[2]);
	OK(cow_tensor_mutable_data(t[2], &w));
	cr_assert_eq(w, p, "written in place");
	cr_assert_eq(cow_test_stats().materialize_copies, 0);
	cr_assert_eq(cow_test_stats().external_copies, 0);
	cow_safetensors_close(f);
	cr_assert(cow_test_check(cow_tensor_const_data(t[0]), 4000, 1),
	    "tensors outlive the handle");
	release_all(t, 4);
	release_all(src, 4);
}

/* ------------------------------------------------------------------ */
/* Saves that fail keep the destination and the snapshot. */

/* The destination as it was: its bytes and inode. */
struct dest {
	unsigned char *bytes;
	size_t n;
	struct st_test_id id;
};

static struct dest
dest_get(const char *p)
{
	struct dest d;

	d.bytes = st_test_read(p, &d.n);
	d.id = st_test_id(p);
	return d;
}

static void
dest_expect_kept(struct dest *d, const char *p)
{
	struct dest now = dest_get(p);

	cr_assert_not_null(now.bytes);
	cr_assert(now.n == d->n && memcmp(now.bytes, d->bytes, d->n) == 0,
	    "the destination's bytes changed");
	cr_assert(now.id.ino == d->id.ino && now.id.dev == d->id.dev,
	    "the destination was replaced");
	free(now.bytes);
	free(d->bytes);
}

Test(safetensors, missing_directory_fails_and_keeps_the_snapshot)
{
	cow_tensor_t *ts[3];
	const char *names[3] = {"x", "y", "z"};
	char bad[PATH_MAX];

	snprintf(bad, sizeof bad, "%s/no/such/ckpt.safetensors", dir);
	for (int i = 0; i < 3; i++)
		ts[i] = patterned(COW_DTYPE_FLOAT64, 1, &(int64_t){100},
		    (unsigned)i);
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_save_t opts = {.mode = modes[m]};
			cow_snapshot_t *snap;
			char want[PATH_MAX + 64];

			OK(cow_snapshot_take(3, ts, names, &snap));
			cr_assert_eq(st_test_save(snap, bad, &opts, job), COW_EIO);
			snprintf(want, sizeof want, "cannot create a temporary "
			    "file in \"%s/no/such\": %s", dir,
			    strerror(ENOENT));
			cr_assert(strstr(cow_last_error(), want) != NULL,
			    "\"%s\" lacks \"%s\"", cow_last_error(), want);
			for (int i = 0; i < 3; i++)
				cr_assert(cow_snapshot_is_held(snap,
				    (size_t)i));
			/* Usable: saved where it can be. */
			OK(st_test_save(snap, path, &opts, job));
			expect_file(path, 3, ts, names);
			cow_snapshot_release(snap);
		}
	release_all(ts, 3);
}

/* A destination that is a directory: the save writes the whole
 * temporary file, then rename fails; COW_EIO naming rename and EISDIR, the
 * directory as it was, the temporary file removed. */
Test(safetensors, directory_destination_fails_at_rename)
{
	cow_tensor_t *t = patterned(COW_DTYPE_INT16, 1, &(int64_t){64}, 3);
	const char *names[1] = {"t"};
	char target[PATH_MAX], inside[PATH_MAX + 8];

	snprintf(target, sizeof target, "%s/adir", dir);
	snprintf(inside, sizeof inside, "%s/keep", target);
	cr_assert_eq(mkdir(target, 0755), 0);
	cr_assert_eq(st_test_write(inside, "x", 1), 0);
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			cow_safetensors_save_t opts = {.mode = modes[m]};
			struct st_test_id id0 = st_test_id(target), id1;
			cow_snapshot_t *snap;
			char want[PATH_MAX + 64];

			OK(cow_snapshot_take(1, &t, names, &snap));
			cr_assert_eq(st_test_save(snap, target, &opts, job),
			    COW_EIO);
			snprintf(want, sizeof want, "rename(\"%s\"): %s", target,
			    strerror(EISDIR));
			cr_assert(strstr(cow_last_error(), want) != NULL,
			    "\"%s\" lacks \"%s\"", cow_last_error(), want);
			id1 = st_test_id(target);
			cr_assert(id0.ino == id1.ino && access(inside, F_OK) == 0,
			    "the directory is as it was");
			cr_assert_eq(st_test_leftovers(dir, "adir"), 0);
			cow_snapshot_release(snap);
		}
	unlink(inside);
	rmdir(target);
	cow_tensor_release(t);
}

/* Cancellation from the progress callback: on the caller's thread
 * (cow_snapshot_cancel), or a job (cow_snapshot_job_cancel, once the job
 * is known). */
struct canceller {
	cow_snapshot_t *snap;
	cow_snapshot_job_t *job;
	sem_t job_known;
	int calls;
	uint64_t last_done, total;
};

static void
cancel_on_first(void *ctx, uint64_t done, uint64_t total)
{
	struct canceller *c = ctx;

	c->last_done = done;
	c->total = total;
	if (c->calls++ > 0)
		return;
	if (c->snap != NULL) {
		cow_snapshot_cancel(c->snap);
	} else {
		while (sem_wait(&c->job_known) != 0)
			continue;
		cow_snapshot_job_cancel(c->job);
	}
}

Test(safetensors, cancellation_midway_keeps_the_destination)
{
	enum { N = 4 };
	cow_tensor_t *ts[N], *src[4];
	const char *names[N] = {"t0", "t1", "t2", "t3"};

	save_four(path, src);
	for (int i = 0; i < N; i++)
		ts[i] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){1024},
		    10u + (unsigned)i);
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			struct canceller c = {0};
			cow_safetensors_save_t opts = {.mode = modes[m],
			    .progress = cancel_on_first, .progress_ctx = &c};
			struct dest d = dest_get(path);
			cow_snapshot_t *snap;
			cow_status_t st;
			size_t held = 0;

			OK(cow_snapshot_take(N, ts, names, &snap));
			sem_init(&c.job_known, 0, 0);
			if (job) {
				OK(cow_safetensors_save_start(snap, path,
				    &opts, &c.job));
				sem_post(&c.job_known);
				st = cow_snapshot_job_wait(c.job);
			} else {
				c.snap = snap;
				st = cow_safetensors_save(snap, path, &opts);
			}
			cr_assert_eq(st, COW_ECANCELED, "%s %s: %s (%s)",
			    mode_name(modes[m]), job ? "job" : "sync",
			    cow_status_str(st), cow_last_error());
			cr_assert(strstr(cow_last_error(), "cancelled") !=
			    NULL, "%s", cow_last_error());
			if (job)
				cow_snapshot_job_release(c.job);
			sem_destroy(&c.job_known);
			cr_assert_eq(c.last_done, 4096, "stopped after the "
			    "first tensor");
			cr_assert_eq(c.total, N * 4096);
			dest_expect_kept(&d, path);
			cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"),
			    0);
			/* The tensor written was released; the others are
			 * held and read as taken. */
			for (size_t i = 0; i < N; i++) {
				cow_tensor_t *g;

				if (!cow_snapshot_is_held(snap, i)) {
					cr_assert_eq(cow_snapshot_get(snap, i,
					    &g), COW_ERELEASED);
					continue;
				}
				held++;
				OK(cow_snapshot_get(snap, i, &g));
				cr_assert(cow_test_check(cow_tensor_const_data(
				    g), 4096, 10u + (unsigned)i));
				cow_tensor_release(g);
			}
			cr_assert_eq(held, N - 1);
			cow_snapshot_release(snap);
		}
	release_all(ts, N);
	release_all(src, 4);
}

/* A second save while a job holds the snapshot: COW_EBUSY, nothing made
 * for it; the job then finishes. */
struct blocker {
	sem_t entered, go;
	int calls;
};

static void
block_first(void *ctx, uint64_t done, uint64_t total)
{
	struct blocker *b = ctx;

	(void)done;
	(void)total;
	if (b->calls++ > 0)
		return;
	sem_post(&b->entered);
	while (sem_wait(&b->go) != 0)
		continue;
}

Test(safetensors, second_save_of_a_snapshot_is_busy)
{
	cow_tensor_t *ts[2];
	const char *names[2] = {"p", "q"};
	char other[PATH_MAX];
	struct blocker b = {0};
	cow_safetensors_save_t opts = {.progress = block_first,
	    .progress_ctx = &b};
	cow_snapshot_job_t *job;
	cow_snapshot_t *snap;

	snprintf(other, sizeof other, "%s/other.safetensors", dir);
	ts[0] = patterned(COW_DTYPE_INT32, 1, &(int64_t){256}, 1);
	ts[1] = patterned(COW_DTYPE_INT32, 1, &(int64_t){256}, 2);
	sem_init(&b.entered, 0, 0);
	sem_init(&b.go, 0, 0);
	OK(cow_snapshot_take(2, ts, names, &snap));
	OK(cow_safetensors_save_start(snap, path, &opts, &job));
	while (sem_wait(&b.entered) != 0)
		continue;
	cr_assert_eq(cow_safetensors_save(snap, other, NULL), COW_EBUSY);
	cr_assert(strstr(cow_last_error(), "another save runs") != NULL);
	cr_assert(access(other, F_OK) != 0);
	cr_assert_eq(st_test_leftovers(dir, "other.safetensors"), 0);
	cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"), 1,
	    "the job's temporary file, while it runs");
	cr_assert(access(path, F_OK) != 0, "not renamed yet");
	sem_post(&b.go);
	OK(cow_snapshot_job_wait(job));
	cow_snapshot_job_release(job);
	cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"), 0);
	expect_file(path, 2, ts, names);
	cow_snapshot_release(snap);
	sem_destroy(&b.entered);
	sem_destroy(&b.go);
	release_all(ts, 2);
}

/* Progress: the tensors' bytes (not the header), increasing, ending at
 * the total; the job's counters agree. */
struct progress_log {
	int calls;
	uint64_t last, total;
	bool decreasing;
};

static void
log_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress_log *l = ctx;

	if (done < l->last)
		l->decreasing = true;
	l->calls++;
	l->last = done;
	l->total = total;
}

Test(safetensors, progress_counts_the_tensor_bytes)
{
	cow_tensor_t *ts[3];
	const char *names[3] = {"big", "mid", "small"};

	/* 9 MiB: more than one 8 MiB chunk. */
	ts[0] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){9 << 18}, 1);
	ts[1] = patterned(COW_DTYPE_UINT8, 2, (int64_t[]){100, 7}, 2);
	ts[2] = patterned(COW_DTYPE_FLOAT16, 0, NULL, 3);
	for (int m = 0; m < 2; m++)
		for (int job = 0; job < 2; job++) {
			struct progress_log l = {0};
			cow_safetensors_save_t opts = {.mode = modes[m],
			    .progress = log_progress, .progress_ctx = &l};
			uint64_t total = (9u << 20) + 700 + 2, done, all;
			cow_snapshot_job_t *j;
			cow_snapshot_t *snap;

			OK(cow_snapshot_take(3, ts, names, &snap));
			if (job) {
				OK(cow_safetensors_save_start(snap, path, &opts,
				    &j));
				OK(cow_snapshot_job_wait(j));
				cow_snapshot_job_progress(j, &done, &all);
				cr_assert_eq(done, total);
				cr_assert_eq(all, total);
				cr_assert(cow_snapshot_job_done(j));
				cow_snapshot_job_release(j);
			} else {
				OK(cow_safetensors_save(snap, path, &opts));
			}
			cr_assert_geq(l.calls, 4, "%d calls", l.calls);
			cr_assert(!l.decreasing);
			cr_assert_eq(l.last, total);
			cr_assert_eq(l.total, total);
			cow_snapshot_release(snap);
			expect_file(path, 3, ts, names);
		}
	release_all(ts, 3);
}

/* A persist-first job with the writers going on at once: the file holds
 * the values at the take, the live tensors the new ones, and no write
 * copied (each writer persisted what it reached first, or waited for the
 * saver). */
Test(safetensors, persist_first_file_holds_the_taken_values)
{
	enum { N = 8 };
	cow_tensor_t *ts[N];
	char buf[N][8];
	const char *names[N];
	cow_safetensors_save_t opts = {.mode = COW_SNAPSHOT_PERSIST_FIRST};
	cow_snapshot_job_t *job;
	cow_snapshot_t *snap;
	cow_safetensors_t *f;

	for (int i = 0; i < N; i++) {
		ts[i] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){1 << 16},
		    20u + (unsigned)i);
		snprintf(buf[i], sizeof buf[i], "w%d", i);
		names[i] = buf[i];
	}
	OK(cow_snapshot_take(N, ts, names, &snap));
	cow_stats_reset();
	OK(cow_safetensors_save_start(snap, path, &opts, &job));
	for (int i = N - 1; i >= 0; i--) {
		void *p;

		OK(cow_tensor_mutable_data(ts[i], &p));
		cow_test_fill(p, 1 << 18, 60u + (unsigned)i);
	}
	OK(cow_snapshot_job_wait(job));
	cow_snapshot_job_release(job);
	cow_snapshot_release(snap);
	cr_assert_eq(cow_test_stats().snapshot_copies, 0);
	cr_assert_eq(cow_test_stats().materialize_copies, 0);
	OK(cow_safetensors_open(path, 0, &f));
	for (int i = 0; i < N; i++) {
		cow_tensor_t *g = get_named(f, names[i]);

		cr_assert(cow_test_check(cow_tensor_const_data(g), 1 << 18,
		    20u + (unsigned)i), "%s holds the taken values", names[i]);
		cr_assert(cow_test_check(cow_tensor_const_data(ts[i]), 1 << 18,
		    60u + (unsigned)i));
		cow_tensor_release(g);
	}
	cow_safetensors_close(f);
	release_all(ts, N);
}

/* A bare file name: the temporary file goes in the current directory. */
Test(safetensors, bare_name_saves_in_the_current_directory)
{
	cow_tensor_t *t = patterned(COW_DTYPE_INT8, 1, &(int64_t){10}, 5);
	const char *names[1] = {"t"};
	char full[PATH_MAX];
	cow_snapshot_t *snap;

	cr_assert_eq(chdir(dir), 0);
	OK(cow_snapshot_take(1, &t, names, &snap));
	OK(cow_safetensors_save(snap, "bare.safetensors", NULL));
	cow_snapshot_release(snap);
	snprintf(full, sizeof full, "%s/bare.safetensors", dir);
	expect_file(full, 1, &t, names);
	cr_assert_eq(st_test_leftovers(dir, "bare.safetensors"), 0);
	cr_assert_eq(chdir("/"), 0);
	cow_tensor_release(t);
}

/* Open: a missing file and a directory are COW_EIO naming the call; bad
 * flags COW_EINVAL; the index functions refuse indices out of range. */
Test(safetensors, open_errors_and_index_bounds)
{
	cow_tensor_t *src[4], *t;
	cow_safetensors_t *f;
	char missing[PATH_MAX];
	size_t i;

	snprintf(missing, sizeof missing, "%s/missing.safetensors", dir);
	cr_assert_eq(cow_safetensors_open(missing, 0, &f), COW_EIO);
	cr_assert(strstr(cow_last_error(), "open(\"") != NULL &&
	    strstr(cow_last_error(), strerror(ENOENT)) != NULL, "%s",
	    cow_last_error());
	cr_assert_eq(cow_safetensors_open(dir, 0, &f), COW_EIO);
	cr_assert(strstr(cow_last_error(), "is not a regular file") != NULL,
	    "%s", cow_last_error());
	save_four(path, src);
	cr_assert_eq(cow_safetensors_open(path, 2, &f), COW_EINVAL);
	cr_assert_eq(cow_safetensors_open(NULL, 0, &f), COW_EINVAL);
	OK(cow_safetensors_open(path, 0, &f));
	cr_assert_eq(cow_safetensors_get(f, 4, &t), COW_ERANGE);
	cr_assert_null(cow_safetensors_name(f, 4));
	cr_assert_eq(cow_safetensors_dtype(f, 4), COW_DTYPE_INVALID);
	cr_assert_eq(cow_safetensors_ndim(f, 4), -1);
	cr_assert_null(cow_safetensors_sizes(f, 4));
	cr_assert_eq(cow_safetensors_nbytes(f, 4), 0);
	cr_assert_eq(cow_safetensors_find(f, "nope", &i), COW_ERANGE);
	cr_assert(strstr(cow_last_error(), "no tensor named \"nope\"") != NULL);
	cr_assert_null(cow_safetensors_metadata_key(f, 0));
	cow_safetensors_close(f);
	cow_safetensors_close(NULL);
	release_all(src, 4);
}

/* With keep, a save that fails midway leaves every tensor held, and the
 * same snapshot saves in full on the next try. */
Test(safetensors, keep_lets_a_failed_save_be_retried)
{
	enum { N = 4 };
	cow_tensor_t *ts[N];
	const char *names[N] = {"t0", "t1", "t2", "t3"};

	for (int i = 0; i < N; i++)
		ts[i] = patterned(COW_DTYPE_FLOAT32, 1, &(int64_t){1024},
		    30u + (unsigned)i);
	for (int m = 0; m < 2; m++) {
		struct canceller c = {0};
		cow_safetensors_save_t opts = {.mode = modes[m],
		    .progress = cancel_on_first, .progress_ctx = &c,
		    .keep = true};
		cow_safetensors_t *f;
		cow_snapshot_t *snap;

		OK(cow_snapshot_take(N, ts, names, &snap));
		c.snap = snap;
		cr_assert_eq(cow_safetensors_save(snap, path, &opts),
		    COW_ECANCELED, "%s", cow_last_error());
		cr_assert_eq(st_test_leftovers(dir, "ckpt.safetensors"), 0);
		for (size_t i = 0; i < N; i++)
			cr_assert(cow_snapshot_is_held(snap, i), "tensor %zu",
			    i);
		opts.progress = NULL;
		OK(cow_safetensors_save(snap, path, &opts));
		OK(cow_safetensors_open(path, 0, &f));
		cr_assert_eq(cow_safetensors_count(f), N);
		for (size_t i = 0; i < N; i++) {
			size_t k;
			cow_tensor_t *t;

			OK(cow_safetensors_find(f, names[i], &k));
			OK(cow_safetensors_get(f, k, &t));
			cr_assert(cow_test_check(cow_tensor_const_data(t), 4096,
			    30u + (unsigned)i), "%s", names[i]);
			cow_tensor_release(t);
		}
		cow_safetensors_close(f);
		cow_snapshot_release(snap);
	}
	release_all(ts, N);
}
