/*
 * st_tool.c - the C side of the safetensors file tests (tests/files/):
 * cowstore saves and loads files for the independent reader and writer
 * of st_spec.py, and runs the failing saves of st_faults.sh.
 *
 *   st_tool save SPEC PATH stream|persist sync|job
 *	Make the tensors SPEC describes, take a snapshot of them and save
 *	it to PATH. SPEC's lines:
 *	  base ID DTYPE NDIM SIZES... HEX    a contiguous tensor with
 *	                                     these bytes ("-": none)
 *	  view NAMEHEX ID NDIM SIZES... STRIDES... OFFSET
 *	                                     a view of base ID
 *	                                     (cow_tensor_as_strided), saved
 *	                                     under the name NAMEHEX decodes to
 *	  meta KEYHEX VALUEHEX               a metadata pair
 *	Prints "saved PATH".
 *   st_tool dump PATH [pread]
 *	Open PATH (mapped, or COW_SAFETENSORS_PREAD) and print one JSON
 *	object: every tensor's name, dtype, shape and bytes (hex), whether
 *	its bytes lie in the file's mapping, the metadata and the handle's
 *	statistics.
 *   st_tool prepare PATH
 *	Save a small valid file to PATH (the destination the faults keep).
 *   st_tool fault ERRNO PATH [FSIZE]
 *	Four saves of a fresh 2 MiB snapshot over PATH (stream and persist
 *	first, on the caller's thread and as a job), each expected to fail
 *	with COW_EIO naming ERRNO (ENOSPC, EROFS, ENOENT, EFBIG, EIO: the
 *	last with a library whose fsync fails, st_tool_sync_eio); with FSIZE,
 *	RLIMIT_FSIZE is set to it and SIGXFSZ ignored. Checks that PATH
 *	keeps its bytes and inode, that no temporary file is left (and, with
 *	ST_PRIVATE_FS set, that the file system's free blocks are back), and
 *	that the snapshot stays usable: each tensor still held reads its
 *	values, a released one says so, and when every tensor is held a save
 *	to $ST_RETRY_DIR succeeds.
 *
 * Failures print "error COW_...: message" (save, dump) or "FAILED: ..."
 * and exit 3.
 */
#define _DEFAULT_SOURCE /* mkdtemp, realpath */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cowstore/cowstore.h>

#include "cow_test.h"
#include "st_test.h"

/* The format's dtype codes (and C128, which it lacks, to ask cowstore to
 * save one), written here from the specification. */
static const struct {
	const char *code;
	cow_dtype_t dtype;
} codes[] = {
	{"BOOL", COW_DTYPE_BOOL}, {"U8", COW_DTYPE_UINT8},
	{"I8", COW_DTYPE_INT8}, {"I16", COW_DTYPE_INT16},
	{"U16", COW_DTYPE_UINT16}, {"I32", COW_DTYPE_INT32},
	{"U32", COW_DTYPE_UINT32}, {"I64", COW_DTYPE_INT64},
	{"U64", COW_DTYPE_UINT64}, {"F16", COW_DTYPE_FLOAT16},
	{"BF16", COW_DTYPE_BFLOAT16}, {"F32", COW_DTYPE_FLOAT32},
	{"F64", COW_DTYPE_FLOAT64}, {"C64", COW_DTYPE_COMPLEX64},
	{"C128", COW_DTYPE_COMPLEX128},
};

static const char *
dtype_code(cow_dtype_t dtype)
{
	for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
		if (codes[i].dtype == dtype)
			return codes[i].code;
	return "?";
}

static void
die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list ap;

	printf("FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(3);
}

/* A library failure: its status and message, exit 3. */
static void
fail_status(cow_status_t st) __attribute__((noreturn));

static void
fail_status(cow_status_t st)
{
	printf("error %s: %s\n", cow_status_str(st), cow_last_error());
	exit(3);
}

static cow_dtype_t
dtype_parse(const char *s)
{
	for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
		if (strcmp(codes[i].code, s) == 0)
			return codes[i].dtype;
	die("unknown dtype %s in the spec", s);
}

/* Hex text to bytes (malloc'd, NUL-terminated); "-" is empty. */
static unsigned char *
unhex(const char *s, size_t *n)
{
	size_t len = strcmp(s, "-") == 0 ? 0 : strlen(s);
	unsigned char *out = malloc(len / 2 + 1);

	if (out == NULL || len % 2 != 0)
		die("bad hex string (%zu digits)", len);
	for (size_t i = 0; i < len / 2; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			die("bad hex digit at %zu", 2 * i);
		out[i] = (unsigned char)v;
	}
	out[len / 2] = '\0';
	*n = len / 2;
	return out;
}

static void
print_hex(const void *p, size_t n)
{
	const unsigned char *b = p;

	putchar('"');
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	putchar('"');
}

/* ------------------------------------------------------------------ */
/* save */

#define MAX_ITEMS 4096

struct spec {
	cow_tensor_t *bases[MAX_ITEMS];
	size_t nbases;
	cow_tensor_t *views[MAX_ITEMS];
	char *names[MAX_ITEMS];
	size_t nviews;
	char *keys[MAX_ITEMS], *values[MAX_ITEMS];
	size_t nmeta;
};

static char *
next_word(char **p)
{
	char *w = strtok_r(NULL, " \t\n", p);

	if (w == NULL)
		die("a spec line ends early");
	return w;
}

static int64_t
next_int(char **p)
{
	return strtoll(next_word(p), NULL, 10);
}

static void
spec_read(const char *path, struct spec *sp)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0;
	char *line = NULL;

	if (f == NULL)
		die("cannot read the spec %s", path);
	while (getline(&line, &cap, f) >= 0) {
		char *save = NULL, *kind = strtok_r(line, " \t\n", &save);
		int64_t sizes[COW_TENSOR_MAX_NDIM], strides[COW_TENSOR_MAX_NDIM];
		cow_status_t st;

		if (kind == NULL)
			continue;
		if (strcmp(kind, "base") == 0) {
			size_t id = (size_t)next_int(&save), n;
			cow_dtype_t dt = dtype_parse(next_word(&save));
			int ndim = (int)next_int(&save);
			unsigned char *data;
			void *p;

			if (id != sp->nbases || id >= MAX_ITEMS)
				die("bases must be numbered 0, 1, ...");
			for (int d = 0; d < ndim; d++)
				sizes[d] = next_int(&save);
			data = unhex(next_word(&save), &n);
			if ((st = cow_tensor_empty(dt, ndim, sizes, NULL,
			    &sp->bases[id])) != COW_OK)
				fail_status(st);
			if (n != cow_tensor_nbytes(sp->bases[id]) &&
			    !(n == 0 && cow_tensor_numel(sp->bases[id]) == 0))
				die("base %zu: %zu bytes for %zu", id, n,
				    cow_tensor_nbytes(sp->bases[id]));
			if (n > 0) {
				if ((st = cow_tensor_mutable_data(
				    sp->bases[id], &p)) != COW_OK)
					fail_status(st);
				memcpy(p, data, n);
			}
			free(data);
			sp->nbases++;
		} else if (strcmp(kind, "view") == 0) {
			size_t n, id;
			int ndim;
			int64_t off;
			cow_tensor_t **v = &sp->views[sp->nviews];

			if (sp->nviews >= MAX_ITEMS)
				die("too many views");
			sp->names[sp->nviews] = (char *)unhex(next_word(&save),
			    &n);
			if ((id = (size_t)next_int(&save)) >= sp->nbases)
				die("view of base %zu, not made", id);
			ndim = (int)next_int(&save);
			for (int d = 0; d < ndim; d++)
				sizes[d] = next_int(&save);
			for (int d = 0; d < ndim; d++)
				strides[d] = next_int(&save);
			off = next_int(&save);
			if ((st = cow_tensor_as_strided(sp->bases[id], ndim,
			    sizes, strides, off, v)) != COW_OK)
				fail_status(st);
			sp->nviews++;
		} else if (strcmp(kind, "meta") == 0) {
			size_t n;

			if (sp->nmeta >= MAX_ITEMS)
				die("too many metadata pairs");
			sp->keys[sp->nmeta] = (char *)unhex(next_word(&save),
			    &n);
			sp->values[sp->nmeta] = (char *)unhex(next_word(&save),
			    &n);
			sp->nmeta++;
		} else {
			die("unknown spec line \"%s\"", kind);
		}
	}
	fclose(f);
	free(line);
}

static void
spec_free(struct spec *sp)
{
	for (size_t i = 0; i < sp->nbases; i++)
		cow_tensor_release(sp->bases[i]);
	for (size_t i = 0; i < sp->nviews; i++) {
		cow_tensor_release(sp->views[i]);
		free(sp->names[i]);
	}
	for (size_t i = 0; i < sp->nmeta; i++) {
		free(sp->keys[i]);
		free(sp->values[i]);
	}
}

static cow_snapshot_save_mode_t
mode_parse(const char *s)
{
	if (strcmp(s, "stream") == 0)
		return COW_SNAPSHOT_STREAM;
	if (strcmp(s, "persist") == 0)
		return COW_SNAPSHOT_PERSIST_FIRST;
	die("mode %s: stream or persist", s);
}

static int
cmd_save(int argc, char **argv)
{
	static struct spec sp;
	cow_safetensors_save_t opts = {0};
	cow_snapshot_t *snap;
	cow_status_t st;

	if (argc != 6)
		die("usage: st_tool save SPEC PATH stream|persist sync|job");
	spec_read(argv[2], &sp);
	opts.mode = mode_parse(argv[4]);
	opts.metadata_count = sp.nmeta;
	opts.metadata_keys = (const char *const *)sp.keys;
	opts.metadata_values = (const char *const *)sp.values;
	if ((st = cow_snapshot_take(sp.nviews, sp.views,
	    (const char *const *)sp.names, &snap)) != COW_OK)
		fail_status(st);
	st = st_test_save(snap, argv[3], &opts, strcmp(argv[5], "job") == 0);
	cow_snapshot_release(snap);
	spec_free(&sp);
	if (st != COW_OK)
		fail_status(st);
	printf("saved %s\n", argv[3]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* dump */

static int
cmd_dump(int argc, char **argv)
{
	const char *path = argv[2];
	bool pread_mode = argc > 3 && strcmp(argv[3], "pread") == 0;
	char *real = realpath(path, NULL);
	cow_safetensors_t *f;
	cow_safetensors_stats_t s;
	cow_status_t st;

	if ((st = cow_safetensors_open(path, pread_mode ?
	    COW_SAFETENSORS_PREAD : 0, &f)) != COW_OK)
		fail_status(st);
	printf("{\"mappings\": %d, \"tensors\": [",
	    real != NULL ? st_test_mappings(real) : -1);
	for (size_t i = 0; i < cow_safetensors_count(f); i++) {
		const char *name = cow_safetensors_name(f, i);
		const int64_t *sizes = cow_safetensors_sizes(f, i);
		cow_tensor_t *t;
		const void *p = NULL;
		size_t n = (size_t)cow_safetensors_nbytes(f, i), k;

		if ((st = cow_safetensors_get(f, i, &t)) != COW_OK ||
		    (st = cow_tensor_read_data(t, &p)) != COW_OK)
			fail_status(st);
		if (cow_tensor_dtype(t) != cow_safetensors_dtype(f, i) ||
		    cow_tensor_ndim(t) != cow_safetensors_ndim(f, i) ||
		    !cow_tensor_is_contiguous(t) ||
		    cow_tensor_nbytes(t) != n)
			die("tensor %zu: the tensor does not match the index",
			    i);
		printf("%s{\"name\": ", i > 0 ? ", " : "");
		print_hex(name, strlen(name));
		printf(", \"dtype\": \"%s\", \"shape\": [",
		    dtype_code(cow_safetensors_dtype(f, i)));
		for (int d = 0; d < cow_safetensors_ndim(f, i); d++) {
			if (sizes[d] != cow_tensor_sizes(t)[d])
				die("tensor %zu: size %d differs", i, d);
			printf("%s%lld", d > 0 ? ", " : "",
			    (long long)sizes[d]);
		}
		printf("], \"nbytes\": %zu, \"in_mapping\": %s, "
		    "\"read_only\": %s, \"data\": ", n,
		    real != NULL && n > 0 && st_test_in_mapping(real, p, n) ?
		    "true" : "false",
		    cow_storage_is_read_only(cow_tensor_storage(t)) ?
		    "true" : "false");
		print_hex(p, n);
		printf("}");
		if (cow_safetensors_find(f, name, &k) != COW_OK || k != i)
			die("cow_safetensors_find(\"%s\") gives %zu, not %zu",
			    name, k, i);
		cow_tensor_release(t);
	}
	printf("], \"metadata\": [");
	for (size_t i = 0; i < cow_safetensors_metadata_count(f); i++) {
		const char *key = cow_safetensors_metadata_key(f, i);
		const char *value = cow_safetensors_metadata_value(f, i);

		if (cow_safetensors_metadata_get(f, key) != value)
			die("cow_safetensors_metadata_get(\"%s\") differs", key);
		printf("%s[", i > 0 ? ", " : "");
		print_hex(key, strlen(key));
		printf(", ");
		print_hex(value, strlen(value));
		printf("]");
	}
	cow_safetensors_stats(f, &s);
	printf("], \"stats\": {\"tensors\": %llu, \"unaligned_copies\": %llu, "
	    "\"bytes_read\": %llu, \"mapped_bytes\": %llu}}\n",
	    (unsigned long long)s.tensors,
	    (unsigned long long)s.unaligned_copies,
	    (unsigned long long)s.bytes_read,
	    (unsigned long long)s.mapped_bytes);
	cow_safetensors_close(f);
	if (real != NULL && st_test_mappings(real) != 0)
		die("%s is still mapped after the handle and its tensors went",
		    real);
	free(real);
	return 0;
}

/* ------------------------------------------------------------------ */
/* prepare, fault */

#define FAULT_TENSORS 4
#define FAULT_ELEMS ((int64_t)128 * 1024)  /* float32: 512 KiB each */

static int
cmd_prepare(int argc, char **argv)
{
	cow_tensor_t *t[2];
	const char *names[2] = {"kept.a", "kept.b"};
	cow_snapshot_t *snap;
	cow_status_t st;

	if (argc != 3)
		die("usage: st_tool prepare PATH");
	if ((st = cow_tensor_arange(COW_DTYPE_FLOAT32, 1000, NULL, &t[0])) !=
	    COW_OK ||
	    (st = cow_tensor_arange(COW_DTYPE_INT64, 300, NULL, &t[1])) !=
	    COW_OK ||
	    (st = cow_snapshot_take(2, t, names, &snap)) != COW_OK ||
	    (st = cow_safetensors_save(snap, argv[2], NULL)) != COW_OK)
		fail_status(st);
	cow_snapshot_release(snap);
	cow_tensor_release(t[0]);
	cow_tensor_release(t[1]);
	printf("prepared %s\n", argv[2]);
	return 0;
}

static int
errno_parse(const char *s)
{
	static const struct {
		const char *name;
		int value;
	} e[] = {{"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"ENOENT", ENOENT},
	    {"EFBIG", EFBIG}, {"EACCES", EACCES}, {"EIO", EIO}};

	for (size_t i = 0; i < sizeof e / sizeof *e; i++)
		if (strcmp(e[i].name, s) == 0)
			return e[i].value;
	die("errno %s: ENOSPC, EROFS, ENOENT, EFBIG, EACCES or EIO", s);
}

/* The directory and base name of @path (into @dir, @base). */
static void
split(const char *path, char *dir, char *base, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL) {
		snprintf(dir, n, ".");
		snprintf(base, n, "%s", path);
	} else {
		snprintf(dir, n, "%.*s", (int)(slash - path), path);
		snprintf(base, n, "%s", slash + 1);
	}
}

/* Fill @t (float32) with pattern @seed. */
static void
pattern(cow_tensor_t *t, unsigned seed)
{
	void *p;
	cow_status_t st;

	if ((st = cow_tensor_mutable_data(t, &p)) != COW_OK)
		fail_status(st);
	cow_test_fill(p, cow_tensor_nbytes(t), seed);
}

static void
fault_one(int err, const char *path, cow_snapshot_save_mode_t mode,
    bool job)
{
	const char *what = mode == COW_SNAPSHOT_STREAM ? "stream" : "persist";
	const char *how = job ? "job" : "sync";
	char dir[PATH_MAX], base[PATH_MAX], msg[1024];
	cow_tensor_t *t[FAULT_TENSORS];
	const char *names[FAULT_TENSORS] = {"f.0", "f.1", "f.2", "f.3"};
	cow_safetensors_save_t opts = {.mode = mode};
	cow_snapshot_t *snap;
	struct st_test_id id0, id1;
	struct statvfs fs0, fs1;
	unsigned char *before, *after;
	size_t nbefore, nafter, held = 0;
	int left;
	bool have_fs;
	const char *retry = getenv("ST_RETRY_DIR");
	cow_status_t st;

	split(path, dir, base, sizeof dir);
	for (int i = 0; i < FAULT_TENSORS; i++) {
		if ((st = cow_tensor_empty(COW_DTYPE_FLOAT32, 1, &(int64_t){
		    FAULT_ELEMS}, NULL, &t[i])) != COW_OK)
			fail_status(st);
		pattern(t[i], 40u + (unsigned)i);
	}
	if ((st = cow_snapshot_take(FAULT_TENSORS, t, names, &snap)) != COW_OK)
		fail_status(st);
	id0 = st_test_id(path);
	before = st_test_read(path, &nbefore);
	/* Free blocks only on a file system of the test's own (others may
	 * write to a shared one meanwhile). */
	have_fs = getenv("ST_PRIVATE_FS") != NULL && statvfs(dir, &fs0) == 0;

	st = st_test_save(snap, path, &opts, job);
	snprintf(msg, sizeof msg, "%s", cow_last_error());
	if (st != COW_EIO)
		die("%s %s: status %s (%s), expected COW_EIO", what, how,
		    cow_status_str(st), msg);
	if (strstr(msg, strerror(err)) == NULL)
		die("%s %s: the message \"%s\" does not name \"%s\"", what,
		    how, msg, strerror(err));
	id1 = st_test_id(path);
	after = st_test_read(path, &nafter);
	if ((before == NULL) != (after == NULL) || nbefore != nafter ||
	    (before != NULL && memcmp(before, after, nbefore) != 0))
		die("%s %s: the destination's bytes changed", what, how);
	if (id0.dev != id1.dev || id0.ino != id1.ino)
		die("%s %s: the destination's inode changed", what, how);
	left = st_test_leftovers(dir, base);
	if (left > 0 || (left < 0 && errno != ENOENT))
		die("%s %s: a temporary file is left in %s (%d)", what, how,
		    dir, left);
	if (have_fs && statvfs(dir, &fs1) == 0 &&
	    fs1.f_bfree != fs0.f_bfree)
		die("%s %s: %llu blocks free after, %llu before", what, how,
		    (unsigned long long)fs1.f_bfree,
		    (unsigned long long)fs0.f_bfree);
	/* The snapshot: what it holds reads as taken; the rest says so. */
	for (int i = 0; i < FAULT_TENSORS; i++) {
		cow_tensor_t *g;
		const void *p;

		if (!cow_snapshot_is_held(snap, (size_t)i)) {
			if (cow_snapshot_get(snap, (size_t)i, &g) !=
			    COW_ERELEASED)
				die("%s %s: released tensor %d is not "
				    "COW_ERELEASED", what, how, i);
			continue;
		}
		held++;
		if ((st = cow_snapshot_get(snap, (size_t)i, &g)) != COW_OK ||
		    (st = cow_tensor_read_data(g, &p)) != COW_OK)
			fail_status(st);
		if (!cow_test_check(p, cow_tensor_nbytes(g), 40u + (unsigned)i))
			die("%s %s: held tensor %d lost its values", what, how,
			    i);
		cow_tensor_release(g);
	}
	printf("fault %s %s %s: COW_EIO \"%s\"; destination kept, no "
	    "temporary file, %zu of %d tensors held and intact", strerror(err),
	    what, how, msg, held, FAULT_TENSORS);
	if (held == FAULT_TENSORS && retry != NULL) {
		char again[PATH_MAX];
		cow_safetensors_t *f;

		snprintf(again, sizeof again, "%s/retry-%s-%s.safetensors",
		    retry, what, how);
		if ((st = st_test_save(snap, again, &opts, job)) != COW_OK ||
		    (st = cow_safetensors_open(again, 0, &f)) != COW_OK)
			fail_status(st);
		for (size_t i = 0; i < FAULT_TENSORS; i++) {
			cow_tensor_t *g;
			size_t k;

			if ((st = cow_safetensors_find(f, names[i], &k)) !=
			    COW_OK ||
			    (st = cow_safetensors_get(f, k, &g)) != COW_OK)
				fail_status(st);
			if (!cow_test_check(cow_tensor_const_data(g),
			    cow_tensor_nbytes(g), 40u + (unsigned)i))
				die("%s %s: the retried save lost tensor %zu",
				    what, how, i);
			cow_tensor_release(g);
		}
		cow_safetensors_close(f);
		unlink(again);
		printf("; saved again elsewhere");
	}
	printf("\n");
	free(before);
	free(after);
	cow_snapshot_release(snap);
	for (int i = 0; i < FAULT_TENSORS; i++)
		cow_tensor_release(t[i]);
}

static int
cmd_fault(int argc, char **argv)
{
	int err;

	if (argc != 4 && argc != 5)
		die("usage: st_tool fault ERRNO PATH [FSIZE]");
	err = errno_parse(argv[2]);
	if (argc == 5) {
		struct rlimit rl;

		rl.rlim_cur = rl.rlim_max = (rlim_t)strtoull(argv[4], NULL, 10);
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			die("setrlimit(RLIMIT_FSIZE): %s", strerror(errno));
	}
	for (int m = 0; m < 2; m++)
		for (int j = 0; j < 2; j++)
			fault_one(err, argv[3], m == 0 ? COW_SNAPSHOT_STREAM :
			    COW_SNAPSHOT_PERSIST_FIRST, j == 1);
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc >= 3 && strcmp(argv[1], "save") == 0)
		return cmd_save(argc, argv);
	if (argc >= 3 && strcmp(argv[1], "dump") == 0)
		return cmd_dump(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "prepare") == 0)
		return cmd_prepare(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "fault") == 0)
		return cmd_fault(argc, argv);
	fprintf(stderr, "usage: st_tool save|dump|prepare|fault ...\n");
	return 2;
}
