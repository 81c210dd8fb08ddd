/*
 * fuzz_tensor.c - operation sequences over up to TM_SLOTS tensors, checked
 * after every operation against the naive reference of tensor_model.c:
 * creation, every view kind with fuzzed arguments, lazy clones, clones,
 * reshape in every mode, in-place and out-of-place ops.
 *
 * For each call the reference decides, from the headers' rules alone,
 * which statuses are allowed (the union of every error that applies, or
 * COW_OK); a failed call must leave its out-parameter untouched and name
 * the function in cow_last_error(). After every operation each live
 * tensor's dtype, sizes, strides (of dimensions longer than 1), offset (when
 * it has elements), contiguity, reference count, storage identity (two
 * tensors share a storage exactly when they share a reference base array)
 * and every element value must match.
 *
 * View and reshape: the reference decides viewability on its own, as "the
 * old positions, in row-major order, are an affine function of the new
 * index with non-negative strides", and takes those strides.
 *
 * Tensors allocate through a capped user allocator (1 MiB), so shapes of
 * terabytes fail with COW_ENOMEM instead of reaching the system allocator;
 * an operation can also make its k-th next allocation fail, after which a
 * call may return COW_ENOMEM but must then change nothing and leak nothing.
 *
 * External memory (storage.h, dlpack.h): tensors over memory this file
 * makes (owned with a deleter, borrowed, read-only) and DLPack imports of
 * it (writable, read-only, copied), which then live like any other tensor.
 * After every operation: read-only memory never changed, borrowed memory
 * changed only while the storage made over it holds it (its home), every
 * deleter ran at most once, and at the end exactly once. A producer may
 * write the memory of its writable import at any time (the import aliases
 * it: the model's base follows).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>
#include <cowstore/ops.h>
#include <cowstore/tensor.h>

#include "dl_dtype.h"
#include "fuzz_cap.h"
#include "fuzz_input.h"
#include "tensor_model.h"

#define MAX_OPS 128
#define MAX_NUMEL 1024 /* larger results are checked, then dropped */
#define ARGS (TM_MAX_NDIM + 2) /* argument arrays: room past the limit */

__extension__ typedef __int128 i128;

#define S(st) TM_S(st)
#define S_OK S(COW_OK)

/* Memory made here for a tensor over it (struct fz.ext). */
enum ext_kind {
	E_OWNED,        /* cow_tensor_from_external with a deleter */
	E_BORROWED,     /* ... without one */
	E_READ_ONLY,    /* ... COW_STORAGE_READ_ONLY, with a deleter */
	E_IMPORT,       /* a writable DLPack import (the producer writes) */
	E_IMPORT_RO,    /* a read-only one */
	E_IMPORT_OWNED, /* a versioned one flagged IS_COPIED */
	E_KINDS
};

#define EXT_MAX 6
#define EXT_BYTES 512

struct ext {
	enum ext_kind kind;
	unsigned char *mem;
	size_t nbytes;
	unsigned char seen[EXT_BYTES]; /* the bytes as last checked */
	int deleted;                   /* deleter calls */
	struct DLManagedTensor legacy;
	struct DLManagedTensorVersioned versioned;
	int64_t shape[TM_MAX_NDIM], strides[TM_MAX_NDIM];
};

struct fz {
	struct tm_model m;
	struct ext ext[EXT_MAX];
	int next;                /* external memories made so far */
	bool imported;           /* a DLPack import was made */
	int base_ext[TM_SLOTS];  /* base b is over ext[base_ext[b] - 1] */
	cow_tensor_t *h[TM_SLOTS];
	cow_allocator_t *capped;
	struct cap cap;
	unsigned injected_before;     /* cap.injected when the op began */
	cow_alloc_stats_t cap_before; /* the capped allocator's counters */
	uint64_t default_live;
	size_t op;
	const char *func;
};

static int sentinel_object;
#define SENTINEL ((cow_tensor_t *)(void *)&sentinel_object)

/* A failed check (fuzz_input.h). */
#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_tensor: model mismatch after op",                   \
	    (x)->op, (x)->func, __VA_ARGS__)


/* ------------------------------------------------------------------ */
/* Decoding arguments.                                                  */

static int
pick_dtype(struct fuzz_input *in)
{
	uint8_t b = fuzz_u8(in);

	if (b >= 252)
		return b == 252 ? -1 : COW_DTYPE_COUNT + (b & 1);
	return b % COW_DTYPE_COUNT;
}

static int
pick_ndim(struct fuzz_input *in)
{
	uint8_t b = fuzz_u8(in);

	if (b >= 252)
		return b == 252 ? -1 : TM_MAX_NDIM + 1;
	return b % 5;
}

static int64_t
pick_size(struct fuzz_input *in)
{
	uint8_t b = fuzz_u8(in);

	if (b < 236)
		return b % 5;
	if (b < 242)
		return -1;
	if (b < 246)
		return -2;
	if (b < 250)
		return (int64_t)1 << 40;
	if (b < 253)
		return (int64_t)1 << 62;
	return INT64_MAX;
}

static int
pick_dim(struct fuzz_input *in)
{
	int8_t v = (int8_t)fuzz_u8(in);

	if (v == 127)
		return 1 << 30;
	if (v == -128)
		return -(1 << 30);
	return v % 6;
}

static int64_t
pick_index(struct fuzz_input *in)
{
	int8_t v = (int8_t)fuzz_u8(in);

	if (v == 127)
		return INT64_MAX;
	if (v == -128)
		return INT64_MIN;
	if (v == 126)
		return (int64_t)1 << 62;
	return v % 7;
}

static double
pick_value(struct fuzz_input *in)
{
	static const double special[] = {0.0, 1.0, -1.0, 2.0, 0.5, -0.0,
	    NAN, INFINITY, -INFINITY, 1e10, 255.0, 256.0, 2147483648.0,
	    -2147483649.0, 9007199254740993.0, 9223372036854775808.0,
	    -9223372036854775808.0, 3.7, -2.5, 1e300, 1e-300, 3.4028235e38,
	    -129.0, 65535.0};
	uint8_t b = fuzz_u8(in);

	if (b < 128)
		return (double)((int)b - 64);
	return special[b % (sizeof special / sizeof special[0])];
}

static int64_t
pick_int(struct fuzz_input *in)
{
	static const int64_t special[] = {INT64_MIN, INT64_MAX, INT32_MIN,
	    INT32_MAX, 255, 256, -1, (int64_t)1 << 53, ((int64_t)1 << 53) + 1};
	uint8_t b = fuzz_u8(in);

	if (b < 200)
		return (int64_t)b - 100;
	return special[b % (sizeof special / sizeof special[0])];
}

/* ------------------------------------------------------------------ */
/* Checking.                                                            */

/* Element k read from memory through the public layout (const data,
 * strides in elements); lib_get checks the getters on some elements. */
static tm_value_t
mem_get(const struct fz *z, int slot, int64_t k)
{
	const struct tm_layout *l = &z->m.t[slot].l;
	cow_dtype_t dtype = tm_dtype(&z->m, slot);
	const unsigned char *p = cow_tensor_const_data(z->h[slot]);
	int64_t idx[TM_MAX_NDIM], e = 0;

	tm_unravel(l, k, idx);
	for (int d = 0; d < l->ndim; d++)
		e += idx[d] * l->strides[d];
	return tm_decode(dtype, p + e * tm_dtype_size(dtype));
}

static tm_value_t
lib_get(const struct fz *z, int slot, int64_t k)
{
	const struct tm_layout *l = &z->m.t[slot].l;
	cow_dtype_t dtype = tm_dtype(&z->m, slot);
	int64_t idx[TM_MAX_NDIM];
	tm_value_t v = {0, 0.0, 0.0};
	cow_status_t st;

	tm_unravel(l, k, idx);
	if (tm_is_float(dtype) || tm_is_complex(dtype))
		st = cow_tensor_get_f64(z->h[slot], l->ndim > 0 ? idx : NULL,
		    &v.f);
	else
		st = cow_tensor_get_i64(z->h[slot], l->ndim > 0 ? idx : NULL,
		    &v.i);
	if (st != COW_OK)
		fail(z, "slot %d: reading element %lld: %s", slot,
		    (long long)k, cow_last_error());
	/* get_f64 gives a complex element's real part; the imaginary part
	 * is compared from memory. */
	if (tm_is_complex(dtype))
		v.im = mem_get(z, slot, k).im;
	return v;
}

static void
check_slot(const struct fz *z, int i)
{
	const struct tm_tensor *mt = &z->m.t[i];
	const struct tm_layout *l = &mt->l;
	const cow_tensor_t *t = z->h[i];
	cow_dtype_t dtype = tm_dtype(&z->m, i);
	int64_t n = tm_numel(l);
	unsigned holders = 0;

	if (cow_tensor_dtype(t) != dtype)
		fail(z, "slot %d: dtype %d, model %d", i,
		    (int)cow_tensor_dtype(t), (int)dtype);
	if (cow_tensor_ndim(t) != l->ndim)
		fail(z, "slot %d: ndim %d, model %d", i, cow_tensor_ndim(t),
		    l->ndim);
	if (cow_tensor_numel(t) != n)
		fail(z, "slot %d: numel %lld, model %lld", i,
		    (long long)cow_tensor_numel(t), (long long)n);
	for (int d = 0; d < l->ndim; d++) {
		if (cow_tensor_sizes(t)[d] != l->sizes[d])
			fail(z, "slot %d: size[%d] %lld, model %lld", i, d,
			    (long long)cow_tensor_sizes(t)[d],
			    (long long)l->sizes[d]);
		if (n > 0 && l->sizes[d] > 1 &&
		    cow_tensor_strides(t)[d] != l->strides[d])
			fail(z, "slot %d: stride[%d] %lld, model %lld", i, d,
			    (long long)cow_tensor_strides(t)[d],
			    (long long)l->strides[d]);
	}
	if (n > 0 && cow_tensor_offset(t) != l->offset)
		fail(z, "slot %d: offset %lld, model %lld", i,
		    (long long)cow_tensor_offset(t), (long long)l->offset);
	if (cow_tensor_is_contiguous(t) != tm_is_contiguous(l))
		fail(z, "slot %d: is_contiguous %d, model %d", i,
		    cow_tensor_is_contiguous(t), tm_is_contiguous(l));
	if ((cow_tensor_const_data(t) == NULL) != (n == 0))
		fail(z, "slot %d: const data %p for %lld elements", i,
		    cow_tensor_const_data(t), (long long)n);
	for (int64_t k = 0; k < n; k++) {
		/* The getters on the first and last elements, memory on
		 * all (the layout was compared above). */
		tm_value_t got = k == 0 || k == n - 1 ? lib_get(z, i, k) :
		    mem_get(z, i, k);
		tm_value_t want = tm_get(&z->m, i, k);

		if (!tm_same(dtype, got, want))
			fail(z, "slot %d: element %lld is %.17g%+.17gi/%lld, "
			    "model %.17g%+.17gi/%lld", i, (long long)k, got.f,
			    got.im, (long long)got.i, want.f, want.im,
			    (long long)want.i);
	}
	for (int j = 0; j < TM_SLOTS; j++) {
		bool same;

		if (!z->m.t[j].live)
			continue;
		holders += z->h[j] == t;
		same = cow_tensor_storage(t) == cow_tensor_storage(z->h[j]);
		if (same != (mt->base == z->m.t[j].base))
			fail(z, "slots %d and %d: same storage %d, model "
			    "same base %d", i, j, same,
			    mt->base == z->m.t[j].base);
	}
	/* Imports allocate from the default allocator, and so does what
	 * is made from them (clones, results of ops on them). */
	if (cow_storage_allocator(cow_tensor_storage(t)) != z->capped &&
	    !(z->imported && cow_storage_allocator(cow_tensor_storage(t)) ==
	    cow_allocator_default()))
		fail(z, "slot %d: storage allocator '%s', not the one given",
		    i, cow_allocator_name(cow_storage_allocator(
		    cow_tensor_storage(t))));
	if (cow_tensor_refcount(t) != holders)
		fail(z, "slot %d: refcount %u, held by %u slots", i,
		    cow_tensor_refcount(t), holders);
}

/* Does a live tensor over base @b have its storage's data in @e? */
static bool
held_by_home(const struct fz *z, int e)
{
	const struct ext *x = &z->ext[e];

	for (int i = 0; i < TM_SLOTS; i++) {
		const unsigned char *p;

		if (!z->m.t[i].live || z->base_ext[z->m.t[i].base] != e + 1)
			continue;
		p = cow_storage_const_data(cow_tensor_storage(z->h[i]));
		if (p != NULL && p >= x->mem && p < x->mem + x->nbytes)
			return true;
	}
	return false;
}

/* External memory: written only as storage.h allows; deleters once. */
static void
check_ext(struct fz *z)
{
	for (int b = 0; b < TM_SLOTS; b++)
		if (!z->m.b[b].live)
			z->base_ext[b] = 0;
	for (int e = 0; e < z->next; e++) {
		struct ext *x = &z->ext[e];
		bool changed;

		if (x->deleted > 1)
			fail(z, "external memory %d: deleter ran %d times", e,
			    x->deleted);
		if (x->deleted == 1 || x->mem == NULL)
			continue;
		changed = memcmp(x->mem, x->seen, x->nbytes) != 0;
		if (changed && (x->kind == E_READ_ONLY ||
		    x->kind == E_IMPORT_RO))
			fail(z, "external memory %d: read-only memory was "
			    "written", e);
		if (changed && x->kind == E_BORROWED && !held_by_home(z, e))
			fail(z, "external memory %d: borrowed memory was "
			    "written, but not by the storage made over it", e);
		memcpy(x->seen, x->mem, x->nbytes);
	}
}

static void
check_all(struct fz *z)
{
	for (int i = 0; i < TM_SLOTS; i++) {
		if (z->m.t[i].live != (z->h[i] != NULL))
			fail(z, "slot %d: handle %p, model live %d", i,
			    (void *)z->h[i], z->m.t[i].live);
		if (z->h[i] != NULL)
			check_slot(z, i);
	}
	check_ext(z);
}

/*
 * The status must be in @allowed, or COW_ENOMEM after an injected
 * allocation failure (then nothing may have changed: the model is not
 * updated, so the next check compares everything, and the capped
 * allocator must hold what it held before). A failure must name the
 * function and leave *out (when given) untouched. Returns true on COW_OK.
 */
static bool
judge(const struct fz *z, cow_status_t st, unsigned allowed,
    cow_tensor_t *const *out)
{
	if (st == COW_ENOMEM && z->cap.injected != z->injected_before) {
		cow_alloc_stats_t now;

		cow_allocator_stats(z->capped, &now);
		if (now.live_allocs != z->cap_before.live_allocs ||
		    now.live_bytes != z->cap_before.live_bytes)
			fail(z, "failed after an injected failure but live "
			    "allocations went from %llu to %llu",
			    (unsigned long long)z->cap_before.live_allocs,
			    (unsigned long long)now.live_allocs);
		allowed |= S(COW_ENOMEM);
	}
	if (st > 0 || st < COW_EFORMAT || (S(st) & allowed) == 0)
		fail(z, "returned %s, allowed set 0x%x; last error '%s'",
		    cow_status_str(st), allowed, cow_last_error());
	if (st == COW_OK) {
		if (out != NULL && (*out == SENTINEL || *out == NULL))
			fail(z, "succeeded without writing *out");
		return true;
	}
	if (strstr(cow_last_error(), z->func) == NULL)
		fail(z, "failed (%s) but the message does not name it: '%s'",
		    cow_status_str(st), cow_last_error());
	if (out != NULL && *out != SENTINEL)
		fail(z, "failed (%s) but wrote *out", cow_status_str(st));
	return false;
}

/* ------------------------------------------------------------------ */
/* Operations.                                                          */

/* Put a successful result into @slot (and drop a huge one after checking
 * it once, so that the checks stay fast). */
static void
place(struct fz *z, int slot, cow_tensor_t *t, int base,
    const struct tm_layout *l)
{
	int64_t n = tm_numel(l);
	bool huge = n > MAX_NUMEL || n < 0;

	/* Empty tensors with a huge dimension are checked once, then
	 * dropped: views of them mostly exercise offset arithmetic on
	 * strides no element uses. */
	for (int d = 0; d < l->ndim; d++)
		huge = huge || l->sizes[d] > MAX_NUMEL;
	z->h[slot] = t;
	tm_tensor_set(&z->m, slot, base, l);
	if (huge) {
		/* Too many elements to compare: the shape only. */
		if (cow_tensor_ndim(t) != l->ndim || cow_tensor_numel(t) != n ||
		    memcmp(cow_tensor_sizes(t), l->sizes,
		    (size_t)l->ndim * sizeof *l->sizes) != 0)
			fail(z, "slot %d: shape differs from the model", slot);
		cow_tensor_release(t);
		z->h[slot] = NULL;
		tm_tensor_drop(&z->m, slot);
	}
}

/* A new contiguous base holding @l's shape; returns the base index. */
static int
new_base(struct fz *z, cow_dtype_t dtype, struct tm_layout *l)
{
	int b;

	tm_contiguous_strides(l);
	l->offset = 0;
	if ((b = tm_base_new(&z->m, dtype, tm_numel(l))) < 0)
		abort();
	return b;
}

static void
op_create(struct fz *z, struct fuzz_input *in, int kind)
{
	static const char *const names[] = {"cow_tensor_zeros",
	    "cow_tensor_full", "cow_tensor_from_data"};
	int dtype = pick_dtype(in), ndim = pick_ndim(in), slot, b;
	int64_t sizes[ARGS] = {0};
	double value = 0.0;
	unsigned errors = 0;
	struct tm_layout l;
	cow_tensor_t *t = SENTINEL;
	unsigned char *data = NULL;
	cow_status_t st;
	int64_t n = 0;
	bool zero = false;

	if ((slot = tm_free_slot(&z->m)) < 0)
		return;
	for (int d = 0; d < ARGS; d++)
		sizes[d] = pick_size(in);
	z->func = names[kind];
	if (kind == 1)
		value = pick_value(in);
	if (!tm_dtype_valid(dtype))
		errors |= S(COW_EINVAL);
	if (ndim < 0 || ndim > TM_MAX_NDIM) {
		errors |= S(COW_ERANGE);
	} else {
		for (int d = 0; d < ndim; d++)
			if (sizes[d] < 0)
				errors |= S(COW_EINVAL);
		/* With another error too, either may be reported. */
		if (tm_bytes_overflow(ndim, sizes, tm_dtype_size(dtype),
		    &zero)) {
			if (errors != 0)
				errors |= S(COW_EOVERFLOW);
			else /* no elements: may be accepted */
				errors |= S(COW_EOVERFLOW) |
				    (zero ? S_OK : 0);
		}
	}
	memset(&l, 0, sizeof l);
	if (errors == 0) {
		l.ndim = ndim;
		memcpy(l.sizes, sizes, sizeof l.sizes);
		n = tm_numel(&l);
		if (n * tm_dtype_size(dtype) > (int64_t)CAP_BYTES)
			errors = S(COW_ENOMEM);
	}
	if (kind == 2 && errors == 0 && n > 0) {
		/* from_data: raw elements in the dtype's format. */
		if ((data = malloc((size_t)(n * tm_dtype_size(dtype)))) ==
		    NULL)
			abort();
		for (int64_t k = 0; k < n; k++) {
			double x = pick_value(in);
			int64_t i = pick_int(in);
			size_t es = (size_t)tm_dtype_size(dtype);
			tm_value_t v = tm_from_double(dtype, x);
			uint16_t bits = (uint16_t)i;

			v.im = tm_is_complex(dtype) ?
			    tm_from_double(dtype, (double)i).f : 0.0;
			if (dtype == COW_DTYPE_FLOAT16 ||
			    dtype == COW_DTYPE_BFLOAT16) {
				/* Any bit pattern, NaN payloads included. */
				memcpy(data + es * (size_t)k, &bits, 2);
				continue;
			}
			if (!tm_is_float(dtype) && !tm_is_complex(dtype))
				v.i = dtype == COW_DTYPE_BOOL ?
				    i % 3 /* 2 reads as true */ : i;
			tm_encode(dtype, data + es * (size_t)k, v);
		}
	}
	if (kind == 2 && data == NULL) {
		/* NULL data is valid only without elements. */
		bool empty = false;

		for (int d = 0; d < ndim && d < ARGS; d++)
			empty = empty || sizes[d] == 0;
		if (!empty || ndim < 0 || ndim > TM_MAX_NDIM)
			errors |= S(COW_EINVAL);
	}
	if (kind == 0)
		st = cow_tensor_zeros(dtype, ndim, sizes, z->capped, &t);
	else if (kind == 1)
		st = cow_tensor_full(dtype, ndim, sizes, value, z->capped, &t);
	else
		st = cow_tensor_from_data(dtype, ndim, sizes, data, z->capped,
		    &t);
	if (!judge(z, st, errors != 0 ? errors : S_OK, &t)) {
		free(data);
		return;
	}
	if (errors & S(COW_EOVERFLOW)) {
		/* Accepted an empty tensor with a huge dimension. */
		memset(&l, 0, sizeof l);
		l.ndim = ndim;
		memcpy(l.sizes, sizes, sizeof l.sizes);
	}
	b = new_base(z, dtype, &l);
	for (int64_t k = 0; k < n; k++) {
		tm_value_t v = {0, 0.0, 0.0};

		if (kind == 1)
			v = tm_from_double(dtype, value);
		else if (kind == 2)
			v = tm_decode(dtype, data + k * tm_dtype_size(dtype));
		z->m.b[b].v[k] = v;
	}
	free(data);
	place(z, slot, t, b, &l);
}

static void
op_arange(struct fz *z, struct fuzz_input *in)
{
	int dtype = pick_dtype(in), slot, b;
	uint8_t k = fuzz_u8(in);
	int64_t n = k < 200 ? k % 20 : k < 230 ? 250 + k % 20 :
	    k < 240 ? -1 : k < 248 ? (int64_t)1 << 40 : INT64_MAX;
	unsigned errors = 0;
	struct tm_layout l;
	cow_tensor_t *t = SENTINEL;
	bool zero;

	if ((slot = tm_free_slot(&z->m)) < 0)
		return;
	z->func = "cow_tensor_arange";
	if (!tm_dtype_valid(dtype))
		errors |= S(COW_EINVAL);
	if (n < 0)
		errors |= S(COW_EINVAL);
	if (tm_bytes_overflow(1, &n, tm_dtype_size(dtype), &zero))
		errors |= S(COW_EOVERFLOW);
	if (errors == 0 && n * tm_dtype_size(dtype) > (int64_t)CAP_BYTES)
		errors |= S(COW_ENOMEM);
	if (!judge(z, cow_tensor_arange(dtype, n, z->capped, &t),
	    errors != 0 ? errors : S_OK, &t))
		return;
	memset(&l, 0, sizeof l);
	l.ndim = 1;
	l.sizes[0] = n;
	b = new_base(z, dtype, &l);
	for (int64_t i = 0; i < n; i++)
		z->m.b[b].v[i] = tm_from_int(dtype, i);
	place(z, slot, t, b, &l);
}

/* The views whose layout the reference computes by formula. */
enum view_kind {
	V_SELECT, V_SLICE, V_NARROW, V_TRANSPOSE, V_PERMUTE, V_UNSQUEEZE,
	V_SQUEEZE, V_SQUEEZE_ALL, V_EXPAND, V_DIAGONAL, V_AS_STRIDED, V_KINDS
};


/*
 * A view call being checked: its source, the three arguments every kind
 * decodes first, the statuses the reference allows (errors: one of them
 * must come back; also_ok: success may also give these) and the result's
 * layout it expects (starts as the source's).
 */
struct view_call {
	struct fuzz_input *in;
	int src;                  /* the source's slot */
	cow_tensor_t *h;          /* its handle */
	struct tm_layout l;       /* its layout */
	struct tm_layout r;       /* the expected result's layout */
	int64_t a, b, c;
	unsigned errors, also_ok;
	cow_tensor_t *t;          /* the result (SENTINEL until written) */
};

/* One view kind: decode its other arguments, state what the reference
 * expects, make the call and return its status. */
typedef cow_status_t (*view_fn)(struct fz *z, struct view_call *v);

static cow_status_t
view_select(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b;
	int d0;

	z->func = "cow_tensor_select";
	d0 = (int)(a % 7) - 3;
	if (!tm_wrap_dim(d0, nd, &d0) || b < -l->sizes[d0] ||
	    b >= l->sizes[d0]) {
		v->errors |= S(COW_ERANGE);
	} else {
		r->offset += (b < 0 ? b + l->sizes[d0] : b) *
		    l->strides[d0];
		tm_remove_dim(r, d0);
	}
	return cow_tensor_select(v->h, (int)(a % 7) - 3, b, &v->t);
}

static cow_status_t
view_slice(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b, c = v->c;
	int d0;
	int64_t size;
	int64_t step = c % 4 == 0 && c != 0 ? c : c % 4;
	int64_t s, e;

	z->func = "cow_tensor_slice";
	d0 = (int)(a % 7) - 3;
	if (step <= 0)
		v->errors |= S(COW_EINVAL);
	if (!tm_wrap_dim(d0, nd, &d0)) {
		v->errors |= S(COW_ERANGE);
	} else if (v->errors == 0) {
		size = l->sizes[d0];
		s = (int64_t)(int8_t)fuzz_u8(v->in) % 7;
		e = pick_index(v->in);
		b = s;
		c = e;
		s = s < 0 ? s + size : s;
		s = s < 0 ? 0 : s > size ? size : s;
		e = e < 0 ? (e < -size ? 0 : e + size) : e;
		e = e > size ? size : e;
		r->sizes[d0] = e > s ? (e - s - 1) / step + 1 : 0;
		if (__builtin_mul_overflow(l->strides[d0], step,
		    &r->strides[d0]))
			v->also_ok |= S(COW_EOVERFLOW);
		if (__builtin_mul_overflow(s, l->strides[d0], &e) ||
		    __builtin_add_overflow(r->offset, e, &r->offset))
			v->also_ok |= S(COW_EOVERFLOW);
	}
	return cow_tensor_slice(v->h, (int)(a % 7) - 3, b, c, step, &v->t);
}

static cow_status_t
view_narrow(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b, c = v->c;
	int d0;

	z->func = "cow_tensor_narrow";
	d0 = (int)(a % 7) - 3;
	if (!tm_wrap_dim(d0, nd, &d0) || b < -l->sizes[d0] ||
	    b > l->sizes[d0] || c < 0 ||
	    c > l->sizes[d0] - (b < 0 ? b + l->sizes[d0] : b)) {
		v->errors |= S(COW_ERANGE);
	} else {
		int64_t step;

		r->sizes[d0] = c;
		/* start == size of a dimension of size 1 may
		 * move a huge stride (no element is reached). */
		if (__builtin_mul_overflow(b < 0 ? b + l->sizes[d0] :
		    b, l->strides[d0], &step) ||
		    __builtin_add_overflow(r->offset, step, &r->offset))
			v->also_ok |= S(COW_EOVERFLOW);
	}
	return cow_tensor_narrow(v->h, (int)(a % 7) - 3, b, c, &v->t);
}

static cow_status_t
view_transpose(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b;
	int d0, d1;

	z->func = "cow_tensor_transpose";
	d0 = (int)(a % 7) - 3;
	d1 = (int)(b % 7) - 3;
	if (!tm_wrap_dim(d0, nd, &d0) || !tm_wrap_dim(d1, nd, &d1)) {
		v->errors |= S(COW_ERANGE);
	} else {
		r->sizes[d0] = l->sizes[d1];
		r->strides[d0] = l->strides[d1];
		r->sizes[d1] = l->sizes[d0];
		r->strides[d1] = l->strides[d0];
	}
	return cow_tensor_transpose(v->h, (int)(a % 7) - 3,
	    (int)(b % 7) - 3, &v->t);
}

static cow_status_t
view_permute(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b, c = v->c;
	int dims[ARGS];
	int n = (a & 7) == 7 ? nd + 1 : nd;
	bool seen[ARGS] = {false};

	z->func = "cow_tensor_permute";
	/* Mostly a permutation: rotate by b, swap by c. */
	for (int i = 0; i < ARGS; i++)
		dims[i] = nd > 0 ? (int)((i + b % 5 + 5) % nd) : 0;
	if (nd > 1 && (c & 1))
		dims[0] = dims[1];
	if (nd > 0 && (c & 2))
		dims[nd - 1] -= nd;
	if (nd > 0 && (c & 4))
		dims[0] = pick_dim(v->in);
	if (n != nd)
		v->errors |= S(COW_ESHAPE) | S(COW_ERANGE);
	for (int i = 0; i < n && i < TM_MAX_NDIM; i++) {
		int w;

		if (!tm_wrap_dim(dims[i], nd, &w)) {
			v->errors |= S(COW_ERANGE);
			continue;
		}
		if (seen[w])
			v->errors |= S(COW_EINVAL);
		seen[w] = true;
		r->sizes[i] = l->sizes[w];
		r->strides[i] = l->strides[w];
	}
	return cow_tensor_permute(v->h, n, dims, &v->t);
}

static cow_status_t
view_unsqueeze(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	int nd = v->l.ndim;
	int64_t a = v->a;
	int d0;

	z->func = "cow_tensor_unsqueeze";
	d0 = (int)(a % 8) - 4;
	if (d0 < -(nd + 1) || d0 > nd || nd + 1 > TM_MAX_NDIM) {
		v->errors |= S(COW_ERANGE);
	} else {
		int p = d0 < 0 ? d0 + nd + 1 : d0;

		for (int i = nd; i > p; i--) {
			r->sizes[i] = r->sizes[i - 1];
			r->strides[i] = r->strides[i - 1];
		}
		r->sizes[p] = 1;
		r->strides[p] = 0; /* not compared (size 1) */
		r->ndim++;
	}
	return cow_tensor_unsqueeze(v->h, (int)(a % 8) - 4, &v->t);
}

static cow_status_t
view_squeeze(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a;
	int d0;

	z->func = "cow_tensor_squeeze";
	d0 = (int)(a % 7) - 3;
	if (!tm_wrap_dim(d0, nd, &d0))
		v->errors |= S(COW_ERANGE);
	else if (l->sizes[d0] == 1)
		tm_remove_dim(r, d0);
	return cow_tensor_squeeze(v->h, (int)(a % 7) - 3, &v->t);
}

static cow_status_t
view_squeeze_all(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;

	z->func = "cow_tensor_squeeze_all";
	for (int i = r->ndim - 1; i >= 0; i--)
		if (r->sizes[i] == 1)
			tm_remove_dim(r, i);
	return cow_tensor_squeeze_all(v->h, &v->t);
}

static cow_status_t
view_expand(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b, c = v->c;
	int64_t sizes[ARGS];
	int n = nd + (int)(a & 3) - ((a & 4) ? 1 : 0), lead;
	bool zero;

	z->func = "cow_tensor_expand";
	if ((a & 63) == 63)
		n = TM_MAX_NDIM + 1;
	for (int i = 0; i < ARGS; i++)
		sizes[i] = pick_size(v->in);
	lead = n - nd;
	/* Mostly -1 or the same size on existing dimensions. */
	for (int i = 0; i < nd && lead >= 0 && n <= TM_MAX_NDIM; i++)
		if ((b >> (i % 8)) & 1)
			sizes[lead + i] = (c & 1) ? -1 : l->sizes[i];
	if (n < nd || n > TM_MAX_NDIM) {
		v->errors |= S(COW_ERANGE);
	} else {
		r->ndim = n;
		for (int i = 0; i < n; i++) {
			int o = i - lead;

			if (o < 0) {
				if (sizes[i] < 0)
					v->errors |= S(COW_EINVAL);
				r->sizes[i] = sizes[i];
				r->strides[i] = 0;
			} else if (sizes[i] == -1 ||
			    sizes[i] == l->sizes[o]) {
				r->sizes[i] = l->sizes[o];
				r->strides[i] = l->strides[o];
			} else if (sizes[i] < -1) {
				v->errors |= S(COW_EINVAL);
			} else if (l->sizes[o] == 1) {
				r->sizes[i] = sizes[i];
				r->strides[i] = 0;
			} else {
				v->errors |= S(COW_ESHAPE);
			}
		}
		/* The resolved shape (-1 replaced) when valid. */
		if (tm_bytes_overflow(n, v->errors != 0 ? sizes : r->sizes, 1,
		    &zero)) {
			/* empty and huge, or with another error */
			if (v->errors != 0)
				v->errors |= S(COW_EOVERFLOW);
			else
				v->also_ok |= S(COW_EOVERFLOW);
		}
		if (v->errors == 0 && tm_numel(r) < 0)
			v->errors |= S(COW_EOVERFLOW);
		else if (v->errors == 0 && tm_numel(r) > 4096)
			v->also_ok |= S(COW_EOVERFLOW); /* huge */
	}
	return cow_tensor_expand(v->h, n, sizes, &v->t);
}

static cow_status_t
view_diagonal(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	const struct tm_layout *l = &v->l;
	int nd = v->l.ndim;
	int64_t a = v->a, b = v->b, c = v->c;
	int d0, d1;
	int64_t off = a, len, s1, s2;

	z->func = "cow_tensor_diagonal";
	d0 = (int)(b % 7) - 3;
	d1 = (int)(c % 7) - 3;
	if (!tm_wrap_dim(d0, nd, &d0) || !tm_wrap_dim(d1, nd, &d1)) {
		v->errors |= S(COW_ERANGE);
	} else if (d0 == d1) {
		v->errors |= S(COW_EINVAL);
	} else {
		s1 = l->sizes[d0];
		s2 = l->sizes[d1];
		if (off >= 0)
			len = off >= s2 ? 0 :
			    s1 < s2 - off ? s1 : s2 - off;
		else
			len = off <= -s1 ? 0 :
			    s1 + off < s2 ? s1 + off : s2;
		if (len > 0 && __builtin_add_overflow(r->offset,
		    off >= 0 ? off * l->strides[d1] :
		    -off * l->strides[d0], &r->offset))
			v->also_ok |= S(COW_EOVERFLOW);
		r->ndim = 0;
		for (int i = 0; i < nd; i++) {
			if (i == d0 || i == d1)
				continue;
			r->sizes[r->ndim] = l->sizes[i];
			r->strides[r->ndim++] = l->strides[i];
		}
		r->sizes[r->ndim] = len;
		/* Only a diagonal of length <= 1 can have a
		 * stride sum that overflows; it is not compared. */
		if (__builtin_add_overflow(l->strides[d0],
		    l->strides[d1], &r->strides[r->ndim]))
			v->also_ok |= S(COW_EOVERFLOW);
		r->ndim++;
	}
	return cow_tensor_diagonal(v->h, off, (int)(b % 7) - 3,
	    (int)(c % 7) - 3, &v->t);
}

static cow_status_t
view_as_strided(struct fz *z, struct view_call *v)
{
	struct tm_layout *r = &v->r;
	int64_t a = v->a;
	int64_t sizes[ARGS], strides[ARGS];
	int n = pick_ndim(v->in);
	int64_t esize = tm_dtype_size(tm_dtype(&z->m, v->src));
	int64_t nbytes = z->m.b[z->m.t[v->src].base].n * esize;
	int64_t off = a < 0 && a > -7 ? 0 : a;
	i128 last;
	bool zero = false, neg = false;

	z->func = "cow_tensor_as_strided";
	for (int i = 0; i < ARGS; i++) {
		sizes[i] = pick_size(v->in);
		strides[i] = pick_index(v->in);
		if (strides[i] < 0 && strides[i] > -7)
			strides[i] = -strides[i];
	}
	last = off;
	if (n < 0 || n > TM_MAX_NDIM) {
		v->errors |= S(COW_ERANGE);
	} else {
		if (off < 0)
			neg = true;
		for (int i = 0; i < n; i++) {
			if (sizes[i] < 0 || strides[i] < 0)
				neg = true;
			else if (sizes[i] == 0)
				zero = true;
			else if (last < ((i128)1 << 120))
				last += (i128)(sizes[i] - 1) *
				    strides[i]; /* < 2^126 each */
		}
		if (last > ((i128)1 << 120))
			last = (i128)1 << 120; /* no i128 overflow */
		if (neg)
			v->errors |= S(COW_EINVAL);
		else if (zero)
			v->also_ok |= S(COW_ERANGE) | S(COW_EOVERFLOW);
		else if ((last + 1) * esize > nbytes)
			v->errors |= S(COW_ERANGE) | S(COW_EOVERFLOW);
		if (tm_bytes_overflow(n, sizes, esize, &zero)) {
			if (zero && !neg)
				v->also_ok |= S(COW_EOVERFLOW);
			else
				v->errors |= S(COW_EOVERFLOW) |
				    S(COW_ERANGE);
		}
		r->ndim = n;
		memcpy(r->sizes, sizes, sizeof r->sizes);
		memcpy(r->strides, strides, sizeof r->strides);
		r->offset = off;
	}
	return cow_tensor_as_strided(v->h, n, sizes, strides, off, &v->t);
}

static const view_fn view_fns[V_KINDS] = {
	[V_SELECT] = view_select, [V_SLICE] = view_slice,
	[V_NARROW] = view_narrow, [V_TRANSPOSE] = view_transpose,
	[V_PERMUTE] = view_permute, [V_UNSQUEEZE] = view_unsqueeze,
	[V_SQUEEZE] = view_squeeze, [V_SQUEEZE_ALL] = view_squeeze_all,
	[V_EXPAND] = view_expand, [V_DIAGONAL] = view_diagonal,
	[V_AS_STRIDED] = view_as_strided,
};

static void
op_view_kind(struct fz *z, struct fuzz_input *in, enum view_kind kind)
{
	struct view_call v = {.in = in, .t = SENTINEL};
	cow_status_t st;
	int slot;

	v.src = tm_pick_live(&z->m, fuzz_u8(in));
	v.a = pick_index(in);
	v.b = pick_index(in);
	v.c = pick_index(in);
	if (v.src < 0 || (slot = tm_free_slot(&z->m)) < 0)
		return;
	v.l = z->m.t[v.src].l;
	v.r = v.l;
	v.h = z->h[v.src];
	st = view_fns[kind](z, &v);
	if (!judge(z, st, v.errors != 0 ? v.errors : S_OK | v.also_ok, &v.t))
		return;
	if (cow_tensor_storage(v.t) != cow_tensor_storage(v.h))
		fail(z, "a view is on another storage");
	place(z, slot, v.t, z->m.t[v.src].base, &v.r);
}

static void
op_view_or_reshape(struct fz *z, struct fuzz_input *in, bool reshape)
{
	int src = tm_pick_live(&z->m, fuzz_u8(in)), slot, ndim, base;
	uint8_t how = fuzz_u8(in);
	int64_t sizes[ARGS], shape[ARGS];
	cow_reshape_mode_t mode = (cow_reshape_mode_t)(how % 4 - 1);
	cow_reshape_mode_t prev = COW_RESHAPE_ALIAS;
	struct tm_layout l, r;
	cow_tensor_t *t = SENTINEL, *h;
	unsigned errors, also_ok;
	bool ambiguous, viewable;
	cow_status_t st;
	int64_t n;

	if (src < 0 || (slot = tm_free_slot(&z->m)) < 0)
		return;
	l = z->m.t[src].l;
	h = z->h[src];
	n = tm_numel(&l);
	ndim = (how >> 4) % 5;
	if ((how >> 4) == 15)
		ndim = TM_MAX_NDIM + 1;
	for (int d = 0; d < ARGS; d++)
		sizes[d] = pick_size(in);
	/* Often a shape with the right element count. */
	if ((how & 4) && ndim >= 1 && ndim <= TM_MAX_NDIM) {
		int64_t rest = n;

		for (int d = 1; d < ndim; d++) {
			if (sizes[d] <= 0 || rest % sizes[d] != 0)
				sizes[d] = 1;
			rest /= sizes[d];
		}
		sizes[0] = (how & 8) ? -1 : rest;
	}
	errors = tm_view_shape(&l, ndim, sizes, shape, &ambiguous, &also_ok);
	viewable = errors == 0 && tm_affine_view(&l, ndim, shape, &r);
	if (!reshape) {
		z->func = "cow_tensor_view";
		if (errors == 0 && !viewable)
			errors = S(COW_ESHAPE);
		st = cow_tensor_view(h, ndim, sizes, &t);
	} else {
		z->func = "cow_reshape_mode_set_thread";
		st = cow_reshape_mode_set_thread(mode, &prev);
		judge(z, st, S_OK, NULL);
		if (prev != COW_RESHAPE_INHERIT)
			fail(z, "previous thread mode %d", (int)prev);
		if (mode == COW_RESHAPE_INHERIT) {
			/* No override: the process-wide mode decides. */
			z->func = "cow_reshape_mode_set";
			judge(z, cow_reshape_mode_set((fuzz_u8(in) & 1) ?
			    COW_RESHAPE_LAZY_COPY : COW_RESHAPE_ALIAS), S_OK,
			    NULL);
			mode = cow_reshape_mode_get();
			if (cow_reshape_mode_effective() != mode)
				fail(z, "effective mode %d, process mode %d",
				    (int)cow_reshape_mode_effective(),
				    (int)mode);
		}
		if (mode != COW_RESHAPE_ALIAS && mode != COW_RESHAPE_LAZY_COPY &&
		    mode != COW_RESHAPE_WARN)
			fail(z, "effective mode %d", (int)mode);
		z->func = "cow_tensor_reshape";
		st = cow_tensor_reshape(h, ndim, sizes, &t);
		cow_reshape_mode_set_thread(COW_RESHAPE_INHERIT, NULL);
		cow_reshape_mode_set(COW_RESHAPE_ALIAS);
	}
	if (ambiguous && st == COW_OK) {
		/* -1 next to a 0: the library picked a size; only the
		 * element count (0) is checked. */
		if (cow_tensor_numel(t) != 0 || cow_tensor_ndim(t) != ndim)
			fail(z, "ambiguous -1 gave %lld elements",
			    (long long)cow_tensor_numel(t));
		memcpy(shape, cow_tensor_sizes(t),
		    (size_t)ndim * sizeof *shape);
		errors = 0;
		viewable = tm_affine_view(&l, ndim, shape, &r);
	}
	if (!judge(z, st, errors != 0 ? errors : S_OK | also_ok, &t))
		return;
	/* WARN returns the legacy aliasing view (with its own shadow
	 * storage; its warnings go to a silent handler). */
	if (viewable && (!reshape || mode == COW_RESHAPE_ALIAS ||
	    mode == COW_RESHAPE_WARN)) {
		if (cow_tensor_storage(t) != cow_tensor_storage(h))
			fail(z, "a view is on another storage");
		place(z, slot, t, z->m.t[src].base, &r);
		return;
	}
	if (cow_tensor_storage(t) == cow_tensor_storage(h))
		fail(z, "a reshape copy is on the input's storage");
	if (viewable) {
		/* LAZY_COPY: the whole base, shared until a write (copied
		 * at once from a pinned storage: storage.h). */
		if (!cow_storage_shares_data(cow_tensor_storage(t),
		    cow_tensor_storage(h)) && n > 0 &&
		    !cow_storage_is_pinned(cow_tensor_storage(h)))
			fail(z, "a lazy-copy reshape shares no data");
		if (cow_storage_shares_data(cow_tensor_storage(t),
		    cow_tensor_storage(h)) &&
		    cow_storage_is_pinned(cow_tensor_storage(h)))
			fail(z, "a lazy-copy reshape shares a pinned storage");
		base = tm_base_new(&z->m, tm_dtype(&z->m, src),
		    z->m.b[z->m.t[src].base].n);
		if (base < 0)
			abort();
		memcpy(z->m.b[base].v, z->m.b[z->m.t[src].base].v,
		    (size_t)z->m.b[base].n * sizeof(tm_value_t));
		place(z, slot, t, base, &r);
		return;
	}
	memset(&r, 0, sizeof r);
	r.ndim = ndim;
	memcpy(r.sizes, shape, (size_t)ndim * sizeof *shape);
	base = new_base(z, tm_dtype(&z->m, src), &r);
	for (int64_t k = 0; k < n; k++)
		z->m.b[base].v[k] = tm_get(&z->m, src, k);
	place(z, slot, t, base, &r);
}

static void
op_clones(struct fz *z, struct fuzz_input *in)
{
	int src = tm_pick_live(&z->m, fuzz_u8(in)), slot, base;
	uint8_t how = fuzz_u8(in) % 3;
	cow_tensor_t *t = SENTINEL, *h;
	struct tm_layout l;
	int64_t n;

	if (src < 0 || (slot = tm_free_slot(&z->m)) < 0)
		return;
	h = z->h[src];
	l = z->m.t[src].l;
	n = tm_numel(&l);
	if (how == 0) {
		z->func = "cow_tensor_lazy_clone";
		if (!judge(z, cow_tensor_lazy_clone(h, &t), S_OK, &t))
			return;
		/* A pinned storage (a writable import) is copied at once. */
		if (cow_tensor_storage(t) == cow_tensor_storage(h) ||
		    (z->m.b[z->m.t[src].base].n > 0 &&
		    cow_storage_shares_data(cow_tensor_storage(t),
		    cow_tensor_storage(h)) ==
		    cow_storage_is_pinned(cow_tensor_storage(h))))
			fail(z, "a lazy clone must be a new storage sharing "
			    "the data, unless its source is pinned");
		base = tm_base_new(&z->m, tm_dtype(&z->m, src),
		    z->m.b[z->m.t[src].base].n);
		if (base < 0)
			abort();
		memcpy(z->m.b[base].v, z->m.b[z->m.t[src].base].v,
		    (size_t)z->m.b[base].n * sizeof(tm_value_t));
		place(z, slot, t, base, &l);
		return;
	}
	if (how == 1) {
		z->func = "cow_tensor_contiguous";
		if (!judge(z, cow_tensor_contiguous(h, &t), S_OK, &t))
			return;
		if (tm_is_contiguous(&l)) {
			if (t != h)
				fail(z, "contiguous input, new tensor");
			place(z, slot, t, z->m.t[src].base, &l);
			return;
		}
	} else {
		z->func = "cow_tensor_clone";
		if (!judge(z, cow_tensor_clone(h, &t), S_OK, &t))
			return;
	}
	if (cow_tensor_storage(t) == cow_tensor_storage(h))
		fail(z, "a clone is on the input's storage");
	base = new_base(z, tm_dtype(&z->m, src), &l);
	for (int64_t k = 0; k < n; k++)
		z->m.b[base].v[k] = tm_get(&z->m, src, k);
	place(z, slot, t, base, &l);
}

typedef cow_status_t (*binop_out_fn)(const cow_tensor_t *,
    const cow_tensor_t *, cow_tensor_t **);
typedef cow_status_t (*binop_in_fn)(cow_tensor_t *, const cow_tensor_t *);

/* The binary ops of issue 39, by enum tm_binop (in place: the first
 * four). */
static const struct {
	const char *out_name, *in_name;
	binop_out_fn out;
	binop_in_fn in;
} binops[TM_BINOPS] = {
	[TM_SUB] = {"cow_tensor_sub", "cow_tensor_sub_", cow_tensor_sub,
	    cow_tensor_sub_},
	[TM_DIV] = {"cow_tensor_div", "cow_tensor_div_", cow_tensor_div,
	    cow_tensor_div_},
	[TM_FLOOR_DIV] = {"cow_tensor_floor_div", "cow_tensor_floor_div_",
	    cow_tensor_floor_div, cow_tensor_floor_div_},
	[TM_MOD] = {"cow_tensor_mod", "cow_tensor_mod_", cow_tensor_mod,
	    cow_tensor_mod_},
	[TM_EQ] = {"cow_tensor_eq", NULL, cow_tensor_eq, NULL},
	[TM_NE] = {"cow_tensor_ne", NULL, cow_tensor_ne, NULL},
	[TM_LT] = {"cow_tensor_lt", NULL, cow_tensor_lt, NULL},
	[TM_LE] = {"cow_tensor_le", NULL, cow_tensor_le, NULL},
	[TM_GT] = {"cow_tensor_gt", NULL, cow_tensor_gt, NULL},
	[TM_GE] = {"cow_tensor_ge", NULL, cow_tensor_ge, NULL},
};

/* In-place: fill_, add_scalar_, mul_scalar_, add_, mul_, copy_, and
 * sub_, div_, floor_div_, mod_ (kind 6, the op from the next byte). */
static void
op_inplace(struct fz *z, struct fuzz_input *in)
{
	uint8_t kind = fuzz_u8(in) % 7;
	enum tm_binop bop = (enum tm_binop)(kind == 6 ? fuzz_u8(in) % 4 : 0);
	int dst = tm_pick_live(&z->m, fuzz_u8(in));
	int src = tm_pick_live(&z->m, fuzz_u8(in));
	double value = pick_value(in);
	struct tm_layout l, bshape;
	cow_dtype_t dtype, sdtype;
	tm_value_t *vals, sv;
	unsigned errors = 0;
	cow_status_t st;
	int64_t n;

	if (dst < 0)
		return;
	l = z->m.t[dst].l;
	n = tm_numel(&l);
	dtype = tm_dtype(&z->m, dst);
	sdtype = tm_dtype(&z->m, src);
	if (kind >= 3) {
		if ((kind < 5 || kind == 6) && sdtype != dtype)
			errors |= S(COW_EDTYPE);
		if (kind == 6 && (!tm_binop_defined(bop, dtype) ||
		    tm_binop_dtype(bop, dtype) != dtype))
			errors |= S(COW_EDTYPE);  /* no in-place form */
		if (!tm_broadcast(&l, &z->m.t[src].l, &bshape) ||
		    !tm_same_shape(&bshape, &l))
			errors |= S(COW_ESHAPE);
	}
	if (n > 0 && tm_overlaps(&l))
		errors |= S(COW_EOVERLAP);
	switch (kind) {
	case 0:
		z->func = "cow_tensor_fill_";
		st = cow_tensor_fill_(z->h[dst], value);
		break;
	case 1:
		z->func = "cow_tensor_add_scalar_";
		st = cow_tensor_add_scalar_(z->h[dst], value);
		break;
	case 2:
		z->func = "cow_tensor_mul_scalar_";
		st = cow_tensor_mul_scalar_(z->h[dst], value);
		break;
	case 3:
		z->func = "cow_tensor_add_";
		st = cow_tensor_add_(z->h[dst], z->h[src]);
		break;
	case 4:
		z->func = "cow_tensor_mul_";
		st = cow_tensor_mul_(z->h[dst], z->h[src]);
		break;
	case 6:
		z->func = binops[bop].in_name;
		st = binops[bop].in(z->h[dst], z->h[src]);
		break;
	default:
		z->func = "cow_tensor_copy_";
		st = cow_tensor_copy_(z->h[dst], z->h[src]);
		break;
	}
	if (!judge(z, st, errors != 0 ? errors : S_OK, NULL))
		return;
	/* Read everything first: inputs are read as before the op. */
	if ((vals = calloc(n > 0 ? (size_t)n : 1, sizeof *vals)) == NULL)
		abort();
	sv = tm_from_double(dtype, value);
	for (int64_t k = 0; k < n; k++) {
		tm_value_t old = tm_get(&z->m, dst, k), o = {0, 0.0, 0.0};

		if (kind >= 3)
			o = tm_get_broadcast(&z->m, src, &l, k);
		switch (kind) {
		case 0:
			vals[k] = sv;
			break;
		case 1:
			vals[k] = tm_add(dtype, old, sv);
			break;
		case 2:
			vals[k] = tm_mul(dtype, old, sv);
			break;
		case 3:
			vals[k] = tm_add(dtype, old, o);
			break;
		case 4:
			vals[k] = tm_mul(dtype, old, o);
			break;
		case 6:
			vals[k] = tm_binop(bop, dtype, old, o);
			break;
		default:
			vals[k] = tm_convert(sdtype, o, dtype);
			break;
		}
	}
	for (int64_t k = 0; k < n; k++)
		tm_set(&z->m, dst, k, vals[k]);
	free(vals);
}

static void
op_set(struct fz *z, struct fuzz_input *in)
{
	int dst = tm_pick_live(&z->m, fuzz_u8(in));
	uint8_t how = fuzz_u8(in);
	int64_t idx[ARGS], k = 0;
	double value = pick_value(in);
	int64_t ivalue = pick_int(in);
	struct tm_layout l;
	unsigned errors = 0;
	bool null_index = (how & 6) == 6;
	cow_status_t st;

	if (dst < 0)
		return;
	l = z->m.t[dst].l;
	for (int d = 0; d < ARGS; d++)
		idx[d] = (int64_t)(int8_t)fuzz_u8(in) % 6;
	if (null_index && l.ndim > 0)
		errors |= S(COW_EINVAL);
	for (int d = 0; d < l.ndim && !null_index; d++) {
		int64_t i = idx[d] < 0 ? idx[d] + l.sizes[d] : idx[d];

		if (i < 0 || i >= l.sizes[d])
			errors |= S(COW_ERANGE);
		else
			k = k * l.sizes[d] + i;
	}
	if (how & 1) {
		z->func = "cow_tensor_set_i64";
		st = cow_tensor_set_i64(z->h[dst], null_index ? NULL : idx,
		    ivalue);
	} else {
		z->func = "cow_tensor_set_f64";
		st = cow_tensor_set_f64(z->h[dst], null_index ? NULL : idx,
		    value);
	}
	if (!judge(z, st, errors != 0 ? errors : S_OK, NULL))
		return;
	tm_set(&z->m, dst, k, (how & 1) ?
	    tm_from_int(tm_dtype(&z->m, dst), ivalue) :
	    tm_from_double(tm_dtype(&z->m, dst), value));
}

/*
 * The library's sums (ops.h, kernels.c): the iterator merges the innermost
 * dimensions that a's strides let it walk as one run (size-1 dimensions
 * dropped; iter.h), and a run whose every element goes to one output
 * element is summed pairwise, NumPy's way, then added to that output
 * element; runs that spread over several outputs are added in index
 * order. This is the length of the first kind of run in a sum over every
 * element of @l.
 */
static int64_t
model_sum_run(const struct tm_layout *l)
{
	int64_t len = 0, stride = 0;

	for (int i = l->ndim - 1; i >= 0; i--) {
		if (l->sizes[i] == 1)
			continue;
		if (len == 0) {
			len = l->sizes[i];
			stride = l->strides[i];
		} else if ((i128)stride * len == (i128)l->strides[i]) {
			len *= l->sizes[i];
		} else {
			break;
		}
	}
	return len == 0 ? 1 : len;
}

/* The pairwise sum, in @adt, of @n elements of slot @a (of @dt) from
 * row-major index @first, with k = 8 partial sums for real dtypes and 4
 * for complex ones (loops.c, PAIRWISE and CPAIRWISE): fewer than k in
 * order from 0; up to 16k in k partial sums (element i into sum i % k),
 * combined as a balanced tree, then the tail of n % k in order; more
 * split at n / 2 rounded down to a multiple of k. */
static tm_value_t
model_pairwise(struct fz *z, int a, cow_dtype_t dt, cow_dtype_t adt,
    int64_t first, int64_t n)
{
#define X(i) tm_convert(dt, tm_get(&z->m, a, first + (i)), adt)
	const int k = tm_is_complex(dt) ? 4 : 8;
	tm_value_t r[8], res;
	int64_t i, n2;

	if (n < k) {
		res = tm_from_int(adt, 0);
		for (i = 0; i < n; i++)
			res = tm_add(adt, res, X(i));
		return res;
	}
	if (n <= 16 * k) {
		for (int j = 0; j < k; j++)
			r[j] = X(j);
		for (i = k; i < n - n % k; i += k)
			for (int j = 0; j < k; j++)
				r[j] = tm_add(adt, r[j], X(i + j));
		/* ((r0 + r1) + (r2 + r3)) [+ ((r4 + r5) + (r6 + r7))] */
		for (int w = 1; w < k; w *= 2)
			for (int j = 0; j < k; j += 2 * w)
				r[j] = tm_add(adt, r[j], r[j + w]);
		res = r[0];
		for (; i < n; i++)
			res = tm_add(adt, res, X(i));
		return res;
	}
#undef X
	n2 = n / 2;
	n2 -= n2 % k;
	return tm_add(adt, model_pairwise(z, a, dt, adt, first, n2),
	    model_pairwise(z, a, dt, adt, first + n2, n - n2));
}

/*
 * cow_tensor_matmul's statuses for operands laid out as @la and @lb of
 * dtypes @da and @db (ops.h), and on success its result's shape in *r and
 * the sizes n, k, m of (n, k) @ (k, m) (a 1-D operand: n = 1 or m = 1).
 * The library copies a non-contiguous input (and one whose data is not
 * aligned to its element) before the product, when the result has
 * elements: an input above the capped allocator's limit may then fail
 * with COW_ENOMEM (or COW_EOVERFLOW for a huge expanded one) rather than
 * succeed.
 */
static unsigned
model_matmul_errors(const struct tm_layout *la, const struct tm_layout *lb,
    cow_dtype_t da, cow_dtype_t db, struct tm_layout *r, int64_t *n,
    int64_t *k, int64_t *m)
{
	unsigned errors = 0, maybe = 0;
	i128 bytes;

	memset(r, 0, sizeof *r);
	if (da != db)  /* every dtype is defined */
		errors |= S(COW_EDTYPE);
	if (la->ndim < 1 || la->ndim > 2 || lb->ndim < 1 || lb->ndim > 2)
		return errors | S(COW_ESHAPE);
	*n = la->ndim == 2 ? la->sizes[0] : 1;
	*k = la->sizes[la->ndim - 1];
	*m = lb->ndim == 2 ? lb->sizes[1] : 1;
	if (*k != lb->sizes[0])
		return errors | S(COW_ESHAPE);
	if (errors != 0)
		return errors;
	if (la->ndim == 2)
		r->sizes[r->ndim++] = *n;
	if (lb->ndim == 2)
		r->sizes[r->ndim++] = *m;
	bytes = (i128)*n * *m * tm_dtype_size(da);
	if (bytes > (i128)COW_STORAGE_MAX_NBYTES)
		return S(COW_EOVERFLOW);
	if (bytes > (i128)CAP_BYTES)
		return S(COW_ENOMEM);
	for (int i = 0; bytes > 0 && i < 2; i++) {
		const struct tm_layout *l = i == 0 ? la : lb;
		int64_t e = tm_numel(l);

		if (e < 0 || (i128)e * tm_dtype_size(da) > (i128)CAP_BYTES)
			maybe |= S(COW_ENOMEM) | S(COW_EOVERFLOW);
	}
	return maybe != 0 ? maybe | S_OK : 0;
}

/*
 * An element-wise op's result (shape @r, dtype @rdt, no other error in
 * @errors) comes from the first operand's allocator (slot @a): when that
 * is the capped one (not an import's, the default allocator) and the
 * result is above its limit, COW_ENOMEM. The slots hold at most MAX_NUMEL
 * elements, but two of them broadcast to up to MAX_NUMEL^2 (a float64
 * quotient of int8 operands is 8 times their size).
 */
static unsigned
result_cap(const struct fz *z, int a, const struct tm_layout *r,
    cow_dtype_t rdt, unsigned errors)
{
	if (errors != 0 || (i128)tm_numel(r) * tm_dtype_size(rdt) <=
	    (i128)CAP_BYTES ||
	    cow_storage_allocator(cow_tensor_storage(z->h[a])) != z->capped)
		return 0;
	return S(COW_ENOMEM);
}

/* Out-of-place: add, mul, neg, sum, sum_dim, equal, and (kind 6) the
 * binary ops of issue 39, the op from the next byte. */
static void
op_outofplace(struct fz *z, struct fuzz_input *in)
{
	uint8_t kind = fuzz_u8(in) % 7;
	/* kind 6: a binary op, or matmul for the value TM_BINOPS. */
	int bsel = kind == 6 ? fuzz_u8(in) % (TM_BINOPS + 1) : 0;
	enum tm_binop bop = (enum tm_binop)(bsel < TM_BINOPS ? bsel : 0);
	bool matmul = kind == 6 && bsel == TM_BINOPS;
	int64_t mn = 0, mk = 0, mm = 0;
	int a = tm_pick_live(&z->m, fuzz_u8(in));
	int b = tm_pick_live(&z->m, fuzz_u8(in));
	int dim = pick_dim(in), d = 0, slot, base;
	bool keepdim = fuzz_u8(in) & 1, eq = false;
	struct tm_layout la, lb, r;
	cow_dtype_t dt, rdt;
	int64_t esize = 0;
	unsigned errors = 0;
	cow_tensor_t *t = SENTINEL;
	cow_status_t st;
	int64_t n;

	if (a < 0 || (slot = tm_free_slot(&z->m)) < 0)
		return;
	la = z->m.t[a].l;
	lb = z->m.t[b].l;
	dt = tm_dtype(&z->m, a);
	rdt = dt;
	memset(&r, 0, sizeof r);
	switch (kind) {
	case 0:
	case 1:
		z->func = kind == 0 ? "cow_tensor_add" : "cow_tensor_mul";
		if (tm_dtype(&z->m, b) != dt)
			errors |= S(COW_EDTYPE);
		if (!tm_broadcast(&la, &lb, &r))
			errors |= S(COW_ESHAPE);
		errors |= result_cap(z, a, &r, rdt, errors);
		st = (kind == 0 ? cow_tensor_add : cow_tensor_mul)(z->h[a],
		    z->h[b], &t);
		break;
	case 6:
		if (matmul) {
			z->func = "cow_tensor_matmul";
			errors = model_matmul_errors(&la, &lb, dt,
			    tm_dtype(&z->m, b), &r, &mn, &mk, &mm);
			st = cow_tensor_matmul(z->h[a], z->h[b], &t);
			break;
		}
		z->func = binops[bop].out_name;
		if (tm_dtype(&z->m, b) != dt || !tm_binop_defined(bop, dt))
			errors |= S(COW_EDTYPE);
		if (!tm_broadcast(&la, &lb, &r))
			errors |= S(COW_ESHAPE);
		rdt = tm_binop_dtype(bop, dt);
		errors |= result_cap(z, a, &r, rdt, errors);
		st = binops[bop].out(z->h[a], z->h[b], &t);
		break;
	case 2:
		z->func = "cow_tensor_neg";
		if (dt == COW_DTYPE_BOOL)
			errors |= S(COW_EDTYPE);
		r = la;
		st = cow_tensor_neg(z->h[a], &t);
		break;
	case 3:
		z->func = "cow_tensor_sum";
		rdt = tm_sum_dtype(dt);
		st = cow_tensor_sum(z->h[a], &t);
		break;
	case 4:
		z->func = "cow_tensor_sum_dim";
		rdt = tm_sum_dtype(dt);
		/* float16 and bfloat16 sums have a float32 scratch of the
		 * result's shape (ops.h): its size decides. */
		esize = tm_dtype_size(tm_sum_acc_dtype(dt)) >
		    tm_dtype_size(rdt) ? tm_dtype_size(tm_sum_acc_dtype(dt)) :
		    tm_dtype_size(rdt);
		if (!tm_wrap_dim(dim, la.ndim, &d)) {
			errors |= S(COW_ERANGE);
		} else {
			r = la;
			if (keepdim)
				r.sizes[d] = 1;
			else
				tm_remove_dim(&r, d);
			/* Reducing the only 0-size dimension of an empty
			 * tensor may leave huge sizes. */
			n = tm_numel(&r);
			if (n < 0 || (i128)n * (i128)esize >
			    (i128)COW_STORAGE_MAX_NBYTES)
				errors |= S(COW_EOVERFLOW) |
				    (esize > tm_dtype_size(rdt) ?
				    S(COW_ENOMEM) : 0);
			else if (n * esize > (int64_t)CAP_BYTES)
				errors |= S(COW_ENOMEM);
		}
		st = cow_tensor_sum_dim(z->h[a], dim, keepdim, &t);
		break;
	default:
		z->func = "cow_tensor_equal";
		if (tm_dtype(&z->m, b) != dt)
			errors |= S(COW_EDTYPE) |
			    (tm_same_shape(&la, &lb) ? 0 : S_OK);
		st = cow_tensor_equal(z->h[a], z->h[b], &eq);
		if (!judge(z, st, errors != 0 ? errors : S_OK, NULL) ||
		    (errors & S(COW_EDTYPE)))
			return;
		if (eq != tm_same_shape(&la, &lb)) {
			if (eq)
				fail(z, "equal shapes differ");
		} else if (eq) {
			bool want = true;

			for (int64_t k = 0; k < tm_numel(&la); k++)
				want = want && tm_equal_elem(dt,
				    tm_get(&z->m, a, k), tm_get(&z->m, b, k));
			if (eq != want)
				fail(z, "equal gave %d, model %d", eq, want);
		}
		return;
	}
	if (!judge(z, st, errors != 0 ? errors : S_OK, &t))
		return;
	if (cow_tensor_storage(t) == cow_tensor_storage(z->h[a]) ||
	    cow_tensor_storage(t) == cow_tensor_storage(z->h[b]))
		fail(z, "an out-of-place result is on an input's storage");
	base = new_base(z, rdt, &r);
	n = tm_numel(&r);
	if (kind == 3 || kind == 4) {
		/* Output element k: the run of la.sizes[d] inputs that
		 * differ only in dimension d (every input for a sum),
		 * summed in the accumulation dtype as the library does
		 * (model_sum_run), then converted to the result's. */
		cow_dtype_t adt = tm_sum_acc_dtype(dt);
		int64_t inner = 1, len = kind == 3 ? tm_numel(&la) :
		    la.sizes[d], run = 0;

		for (int i = d + 1; kind == 4 && i < la.ndim; i++)
			inner *= la.sizes[i];
		if (kind == 3)
			run = model_sum_run(&la);
		else if (inner == 1)
			run = len;  /* d is the innermost dimension */
		for (int64_t k = 0; k < n; k++) {
			int64_t outer = k / inner, rest = k % inner;
			tm_value_t acc = tm_from_int(adt, 0);

			for (int64_t j = 0; run > 0 && j < len; j += run)
				acc = tm_add(adt, acc, model_pairwise(z, a, dt,
				    adt, outer * len + j, run));
			for (int64_t j = 0; run == 0 && j < len; j++)
				acc = tm_add(adt, acc, tm_convert(dt,
				    tm_get(&z->m, a, (outer * len + j) *
				    inner + rest), adt));
			z->m.b[base].v[k] = tm_convert(adt, acc, rdt);
		}
	} else {
		for (int64_t k = 0; matmul && k < n; k++) {
			/* Element (i, j): products in index order from 0,
			 * each product and sum rounded (ops.h): bool's add
			 * and mul are or and and, complex mul is the rule's
			 * ar*br - ai*bi and ar*bi + ai*br; float16 and
			 * bfloat16 in float32, rounded once at the end. */
			int64_t i = k / mm, j = k % mm;
			cow_dtype_t adt = dt == COW_DTYPE_FLOAT16 ||
			    dt == COW_DTYPE_BFLOAT16 ? COW_DTYPE_FLOAT32 : dt;
			tm_value_t acc = tm_from_int(adt, 0);

			for (int64_t p = 0; p < mk; p++)
				acc = tm_add(adt, acc, tm_mul(adt,
				    tm_convert(dt, tm_get(&z->m, a,
				    i * mk + p), adt),
				    tm_convert(dt, tm_get(&z->m, b,
				    p * mm + j), adt)));
			z->m.b[base].v[k] = tm_convert(adt, acc, dt);
		}
		for (int64_t k = 0; !matmul && k < n; k++) {
			tm_value_t x = kind == 2 ? tm_get(&z->m, a, k) :
			    tm_get_broadcast(&z->m, a, &r, k);

			if (kind == 6)
				x = tm_binop(bop, dt, x,
				    tm_get_broadcast(&z->m, b, &r, k));
			else if (kind == 0)
				x = tm_add(dt, x,
				    tm_get_broadcast(&z->m, b, &r, k));
			else if (kind == 1)
				x = tm_mul(dt, x,
				    tm_get_broadcast(&z->m, b, &r, k));
			else
				x = tm_neg(dt, x);
			z->m.b[base].v[k] = x;
		}
	}
	place(z, slot, t, base, &r);
}

/* ------------------------------------------------------------------ */
/* External memory.                                                     */

static void
ext_free(struct ext *x)
{
	x->deleted++;
	free(x->mem);
}

static void
ext_deleter(void *data, size_t nbytes, void *ctx)
{
	struct ext *x = ctx;

	if (data != x->mem || nbytes != x->nbytes)
		abort(); /* the deleter got other memory than it was given */
	ext_free(x);
}

static void
ext_legacy_deleter(struct DLManagedTensor *self)
{
	ext_free(self->manager_ctx);
}

static void
ext_versioned_deleter(struct DLManagedTensorVersioned *self)
{
	ext_free(self->manager_ctx);
}

/*
 * A tensor over fresh external memory: a small valid layout (the error
 * rules are fuzz_api's), values from the input, the memory of @kind. The
 * model gets a base of the storage's elements, read back from the memory.
 */
static void
op_external(struct fz *z, struct fuzz_input *in)
{
	enum ext_kind kind = (enum ext_kind)(fuzz_u8(in) % E_KINDS);
	int dtype = fuzz_u8(in) % COW_DTYPE_COUNT, slot, b, e = z->next;
	int64_t es = tm_dtype_size(dtype), end, nelem;
	bool versioned = (fuzz_u8(in) & 1) || kind == E_IMPORT_OWNED;
	struct tm_layout l;
	struct ext *x;
	cow_tensor_t *t = SENTINEL;
	cow_status_t st;
	uint64_t flags = 0;

	if ((slot = tm_free_slot(&z->m)) < 0 || e == EXT_MAX)
		return;
	memset(&l, 0, sizeof l);
	l.ndim = fuzz_u8(in) % 4;
	for (int d = 0; d < l.ndim; d++)
		l.sizes[d] = fuzz_u8(in) % 5;
	if (fuzz_u8(in) & 1) {
		tm_contiguous_strides(&l);
	} else {
		for (int d = 0; d < l.ndim; d++)
			l.strides[d] = fuzz_u8(in) % 7;
	}
	/* Imports start at their first element (the producer's
	 * byte_offset is 0): their storage begins there. */
	l.offset = kind >= E_IMPORT ? 0 : fuzz_u8(in) % 4;
	end = l.offset + 1;
	for (int d = 0; d < l.ndim; d++)
		end += l.strides[d] * (l.sizes[d] - 1);
	if (tm_numel(&l) == 0)
		end = l.offset;
	nelem = end;
	if (nelem * es > EXT_BYTES)
		return;
	x = &z->ext[e];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	x->nbytes = (size_t)(nelem * es);
	if ((x->mem = malloc(x->nbytes > 0 ? x->nbytes : 1)) == NULL)
		abort();
	for (size_t i = 0; i < x->nbytes; i++)
		x->mem[i] = fuzz_u8(in);
	if (dtype == COW_DTYPE_BOOL)
		for (size_t i = 0; i < x->nbytes; i++)
			x->mem[i] %= 3; /* 2 reads as true */
	memcpy(x->seen, x->mem, x->nbytes);
	z->next++;
	if (kind < E_IMPORT) {
		z->func = "cow_tensor_from_external";
		st = cow_tensor_from_external(x->mem, dtype, l.ndim, l.sizes,
		    l.strides, l.offset, kind == E_BORROWED ? NULL :
		    ext_deleter, x, kind == E_READ_ONLY ?
		    COW_STORAGE_READ_ONLY : 0, z->capped, &t);
	} else {
		struct cow__dl_tensor dl = {x->mem, {COW__DL_CPU, 0},
		    l.ndim, {0, 0, 1}, x->shape, x->strides, 0};

		if (!dl_of((cow_dtype_t)dtype, &dl.dtype.code, &dl.dtype.bits))
			abort();
		memcpy(x->shape, l.sizes, sizeof x->shape);
		memcpy(x->strides, l.strides, sizeof x->strides);
		if (kind == E_IMPORT_RO)
			flags = COW__DL_FLAG_READ_ONLY;
		if (kind == E_IMPORT_OWNED)
			flags = COW__DL_FLAG_IS_COPIED;
		x->legacy = (struct DLManagedTensor){dl, x, ext_legacy_deleter};
		x->versioned = (struct DLManagedTensorVersioned){{1, 0}, x,
		    ext_versioned_deleter, flags, dl};
		z->func = versioned ? "cow_tensor_from_dlpack_versioned" :
		    "cow_tensor_from_dlpack";
		z->imported = true;
		st = versioned ? cow_tensor_from_dlpack_versioned(
		    &x->versioned, 0, &t) : cow_tensor_from_dlpack(&x->legacy,
		    kind == E_IMPORT_RO ? COW_DLPACK_READ_ONLY : 0, &t);
	}
	if (!judge(z, st, S_OK, &t)) {
		/* A refused creation keeps the memory (an import's deleter
		 * has run: the memory went with it). */
		if (kind >= E_IMPORT ? x->deleted != 1 : x->deleted != 0)
			fail(z, "a refused creation ran the deleter %d times",
			    x->deleted);
		if (kind < E_IMPORT) {
			free(x->mem);
			x->mem = NULL;
		}
		return;
	}
	if ((b = tm_base_new(&z->m, (cow_dtype_t)dtype, nelem)) < 0)
		abort();
	for (int64_t k = 0; k < nelem; k++)
		z->m.b[b].v[k] = tm_decode((cow_dtype_t)dtype, x->mem + k * es);
	z->base_ext[b] = e + 1;
	if (cow_storage_is_read_only(cow_tensor_storage(t)) !=
	    (kind == E_READ_ONLY || kind == E_IMPORT_RO) ||
	    cow_storage_is_pinned(cow_tensor_storage(t)) != (kind == E_IMPORT))
		fail(z, "external memory %d (kind %d): read-only %d, pinned %d",
		    e, (int)kind, cow_storage_is_read_only(cow_tensor_storage(t)),
		    cow_storage_is_pinned(cow_tensor_storage(t)));
	place(z, slot, t, b, &l);
}

/* The producer of a writable import writes its memory: the import aliases
 * it, so the model's base takes the new value. */
static void
op_produce(struct fz *z, struct fuzz_input *in)
{
	int e = fuzz_u8(in) % EXT_MAX, b = -1;
	struct ext *x = &z->ext[e];
	cow_dtype_t dtype;
	int64_t es, k;

	if (e >= z->next || x->kind != E_IMPORT || x->deleted)
		return;
	for (int i = 0; i < TM_SLOTS; i++)
		if (z->m.b[i].live && z->base_ext[i] == e + 1)
			b = i;
	if (b < 0 || z->m.b[b].n == 0)
		return;
	z->func = "producer write";
	dtype = z->m.b[b].dtype;
	es = tm_dtype_size(dtype);
	k = fuzz_u8(in) % z->m.b[b].n;
	for (int64_t i = 0; i < es; i++)
		x->mem[k * es + i] = dtype == COW_DTYPE_BOOL ? fuzz_u8(in) % 3 :
		    fuzz_u8(in);
	z->m.b[b].v[k] = tm_decode(dtype, x->mem + k * es);
	memcpy(x->seen, x->mem, x->nbytes);
}

static void
op_release(struct fz *z, struct fuzz_input *in)
{
	int slot = tm_pick_live(&z->m, fuzz_u8(in));

	if (slot < 0)
		return;
	cow_tensor_release(z->h[slot]);
	z->h[slot] = NULL;
	tm_tensor_drop(&z->m, slot);
}

static void
run_op(struct fz *z, struct fuzz_input *in)
{
	uint8_t byte = fuzz_u8(in), code = byte % 25;

	z->func = "?";
	/* Operations added later take the bytes from 250 up, so the bytes
	 * below keep choosing what they chose when the corpus was made. */
	if (byte >= 250) {
		z->injected_before = z->cap.injected;
		cow_allocator_stats(z->capped, &z->cap_before);
		if (byte < 254)
			op_external(z, in);
		else
			op_produce(z, in);
		return;
	}
	z->injected_before = z->cap.injected;
	cow_allocator_stats(z->capped, &z->cap_before);
	switch (code) {
	case 0:
	case 1:
	case 2:
		op_create(z, in, code);
		break;
	case 3:
		op_arange(z, in);
		break;
	case 4:
	case 5:
	case 6:
	case 7:
	case 8:
	case 9:
	case 10:
	case 11:
	case 12:
	case 13:
	case 14:
		op_view_kind(z, in, (enum view_kind)(code - 4));
		break;
	case 15:
		op_view_or_reshape(z, in, false);
		break;
	case 16:
		op_view_or_reshape(z, in, true);
		break;
	case 17:
		op_clones(z, in);
		break;
	case 18:
	case 19:
		op_inplace(z, in);
		break;
	case 20:
		op_set(z, in);
		break;
	case 21:
	case 22:
		op_outofplace(z, in);
		break;
	case 23:
		op_release(z, in);
		break;
	default:
		/* Fail the k-th allocation from now (0: disarm). */
		z->cap.fail_in = fuzz_u8(in) % 5;
		break;
	}
}

/* FUZZ_TENSOR_TRACE=1 in the environment: print every operation and the
 * model's tensors (to read a reproducer). */
static void
trace_state(const struct fz *z)
{
	fprintf(stderr, "op %zu: %s -> %s\n", z->op, z->func,
	    cow_last_error());
	for (int i = 0; i < TM_SLOTS; i++) {
		const struct tm_layout *l = &z->m.t[i].l;

		if (!z->m.t[i].live)
			continue;
		fprintf(stderr, "  slot %d base %d dtype %d offset %lld:", i,
		    z->m.t[i].base, (int)tm_dtype(&z->m, i),
		    (long long)l->offset);
		for (int d = 0; d < l->ndim; d++)
			fprintf(stderr, " %lld/%lld", (long long)l->sizes[d],
			    (long long)l->strides[d]);
		fprintf(stderr, "\n");
	}
}

static void
silent_shadow_handler(const cow_shadow_event_t *event, void *ctx)
{
	(void)event;
	(void)ctx;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int trace = -1;

	struct fuzz_input in = {data, size};
	struct fz z;
	cow_alloc_stats_t st;

	if (trace < 0) {
		trace = getenv("FUZZ_TENSOR_TRACE") != NULL;
		/* Reshape-alias warnings (WARN mode) are expected here. */
		cow_shadow_handler_set(silent_shadow_handler, NULL);
	}
	memset(&z, 0, sizeof z);
	tm_init(&z.m);
	z.func = "setup";
	if (cow_allocator_new(&cap_ops, &z.cap, "capped", &z.capped) !=
	    COW_OK)
		fail(&z, "%s", cow_last_error());
	cow_allocator_stats(cow_allocator_default(), &st);
	z.default_live = st.live_bytes;
	for (z.op = 0; z.op < MAX_OPS && fuzz_more(&in); z.op++) {
		run_op(&z, &in);
		if (trace)
			trace_state(&z);
		check_all(&z);
	}
	z.func = "teardown";
	z.cap.fail_in = 0;
	for (int i = 0; i < TM_SLOTS; i++)
		if (z.h[i] != NULL)
			cow_tensor_release(z.h[i]);
	/* Every deleter exactly once; borrowed memory is ours to free. */
	for (int e = 0; e < z.next; e++) {
		struct ext *x = &z.ext[e];

		if (x->kind == E_BORROWED) {
			free(x->mem);
			continue;
		}
		if (x->mem != NULL && x->deleted != 1)
			fail(&z, "external memory %d (kind %d): deleter ran %d "
			    "times", e, (int)x->kind, x->deleted);
	}
	cow_allocator_stats(z.capped, &st);
	if (st.live_allocs != 0)
		fail(&z, "%llu allocations live after releasing every tensor",
		    (unsigned long long)st.live_allocs);
	cow_allocator_stats(cow_allocator_default(), &st);
	if (st.live_bytes != z.default_live)
		fail(&z, "default allocator: %llu live bytes, %llu before",
		    (unsigned long long)st.live_bytes,
		    (unsigned long long)z.default_live);
	if (cow_allocator_destroy(z.capped) != COW_OK)
		fail(&z, "destroy: %s", cow_last_error());
	tm_fini(&z.m);
	return 0;
}
