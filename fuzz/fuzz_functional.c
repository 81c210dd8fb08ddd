/*
 * fuzz_functional.c - programs with views and in-place ops, run three ways
 * side by side and checked against each other after every operation:
 *
 *   world 0: the ordinary strided runtime (plain tensors, views alias);
 *   world 1: functional mode on the strided backend;
 *   world 2: the opaque test backend (no strides, no sharing), which needs
 *            functionalization.
 *
 * Each world holds SLOTS tensor handles and STORES storages. An operation
 * is decoded once and executed in each world in turn (the thread's mode
 * and backend set for that world); every world must return the same status
 * (and the same answer, for equal). The CHECK operation, and the end of
 * every input, compare a slot's metadata (dtype, sizes, strides of
 * dimensions longer than 1, offset when it has elements, contiguity) and
 * every value across the worlds: a read, which makes the layer apply its
 * queued updates.
 *
 * Storages (issue 15): STORAGE makes a storage with known elements in
 * every world, FROM_STORAGE a tensor over one with a fuzzed dtype and
 * layout. In the plain world such tensors alias through the storage; in the
 * functional worlds they must alias as one group, and every write must
 * reach the storage: after every operation, and after the last release at
 * the end, each storage's bytes must be the same in all worlds; where they
 * differ only in a NaN's payload (unspecified, ops.h), the rest of the
 * input is not compared (nan_payload_only()). The one
 * documented difference: while tensors of one dtype over a storage live
 * (in the plain world: a slot over that storage), a functional world
 * refuses one of another dtype with COW_EDTYPE; the operation is then
 * skipped in every world. Any other refusal, or this one when no such
 * tensor lives, is a disagreement.
 *
 * FAULT arms an allocation failure in world 1 or 2 for the next operation:
 * when the call fails (COW_ENOMEM) it must not have changed any value of
 * that world nor written its out-parameter; the call is then retried
 * unarmed and must agree with world 0. Allocations go through a capped
 * allocator per world, whose live bytes must be 0 once every slot is
 * released, and LeakSanitizer checks the rest.
 *
 * Exactness: scalars are small integers, and values small integers or
 * (from_data) small integers times powers of two; every elementwise op
 * rounds once, the same in every world. A float sum depends
 * on the order of its additions, which ops.h fixes for every layout: every
 * world must give its bits, whatever the values (a storage's bytes read as
 * another dtype give any float; issue 36: the opaque backend summed in
 * index order, unseen while sums of such values were skipped). Complex
 * values are compared by both parts. An operation whose result in world 0
 * has more than MAX_NUMEL elements is skipped.
 *
 * FUZZ_FUNCTIONAL_TRACE=1 in the environment prints each operation and
 * its status (world 0's) as it runs.
 *
 * Input: byte 0, bit 0: record a trace (checked to be view-free IR at the
 * end); then operations, one opcode byte each followed by its arguments
 * (see decode(); fuzz/make_seeds.sh writes seeds in this format).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cowstore/cowstore.h>
#include <cowstore/testing.h>

#include "fuzz_cap.h"
#include "fuzz_input.h"
#include "tensor_model.h"
#include "tensor/shape.h"

#define SLOTS 6
#define STORES 2
#define MAX_STORE_ELEMS 32
#define MAX_STORE_BYTES (MAX_STORE_ELEMS * 16 + 3) /* complex128 */
#define WORLDS 3
#define MAX_OPS 96
#define MAX_NUMEL 256
#define MAXD COW_TENSOR_MAX_NDIM

/* FUZZ_FUNCTIONAL_TRACE set: print every operation and its status. */
static bool verbose;

static const char *const world_name[WORLDS] = {"plain",
    "functional strided", "functional opaque"};

enum op_kind {
	OP_CREATE, OP_VIEW, OP_RESHAPE, OP_LAZY_CLONE, OP_CLONE, OP_SCALAR_,
	OP_BINARY_, OP_SET, OP_BINARY, OP_NEG, OP_SUM, OP_EQUAL,
	OP_TRANSPOSE_, OP_CHECK, OP_RELEASE, OP_FAULT, OP_STORAGE,
	OP_FROM_STORAGE, OP_COUNT
};

static const char *const op_name[OP_COUNT] = {"create", "view", "reshape",
    "lazy_clone", "clone", "scalar_", "binary_", "set", "binary", "neg",
    "sum", "equal", "transpose_", "check", "release", "fault", "storage",
    "from_storage"};

/* OP_BINARY_ and OP_BINARY by o->sub. */
static cow_status_t (*const binary_in[7])(cow_tensor_t *,
    const cow_tensor_t *) = {cow_tensor_add_, cow_tensor_mul_,
    cow_tensor_copy_, cow_tensor_sub_, cow_tensor_div_,
    cow_tensor_floor_div_, cow_tensor_mod_};
static cow_status_t (*const binary_out[13])(const cow_tensor_t *,
    const cow_tensor_t *, cow_tensor_t **) = {cow_tensor_add,
    cow_tensor_mul, cow_tensor_sub, cow_tensor_div, cow_tensor_floor_div,
    cow_tensor_mod, cow_tensor_eq, cow_tensor_ne, cow_tensor_lt,
    cow_tensor_le, cow_tensor_gt, cow_tensor_ge, cow_tensor_matmul};

enum view_kind {
	VK_VIEW, VK_SELECT, VK_SLICE, VK_NARROW, VK_TRANSPOSE, VK_PERMUTE,
	VK_UNSQUEEZE, VK_SQUEEZE, VK_SQUEEZE_ALL, VK_EXPAND, VK_DIAGONAL,
	VK_AS_STRIDED, VK_COUNT
};

/* One decoded operation; its meaning per kind is in exec(). */
struct op {
	enum op_kind kind;
	int sub;                  /* creation / view kind, scalar op, ... */
	int dst, a, b;            /* slots */
	cow_dtype_t dtype;
	int ndim;                 /* of sizes / strides / perm / index */
	int64_t sizes[MAXD + 1];
	int64_t strides[MAXD + 1];
	int perm[MAXD + 1];
	int64_t x, y, z;          /* dims, indices, offsets */
	int64_t step;             /* slice */
	double value;
	double data[MAX_NUMEL];   /* from_data */
	int world;                /* fault: 1 or 2 */
	unsigned nth;             /* fault: the nth allocation fails */
};

struct world {
	cow_tensor_t *h[SLOTS];
	cow_storage_t *store[STORES];
	cow_allocator_t *alloc;
	struct cap cap;
};

struct fz {
	struct world w[WORLDS];
	cow_dtype_t store_dtype[STORES]; /* the dtype a storage was made in */
	unsigned store_viewed[STORES];   /* 1u << dtype: tensors made over it */
	/* A storage's bytes differ between the worlds in a NaN's payload
	 * (nan_payload_only()): a later view of them as another dtype would
	 * show it, so nothing after that operation is compared. */
	bool nan_diverged;
	size_t op;
	const char *what;
};

/* A failed check (fuzz_input.h). */
#define fail(x, ...)                                                        \
	fuzz_fail("fuzz_functional: worlds disagree after op",              \
	    (x)->op, (x)->what, __VA_ARGS__)


/* ------------------------------------------------------------------ */
/* Decoding.                                                            */

static int
pick_slot(struct fuzz_input *in)
{
	return fuzz_u8(in) % SLOTS;
}

/* Mostly 0..4; sometimes -1 (inferred / invalid) or 5..8. */
static int64_t
pick_size(struct fuzz_input *in)
{
	uint8_t b = fuzz_u8(in);

	if (b >= 250)
		return b == 250 ? -1 : (int64_t)(b - 246);
	return b % 5;
}

/* A small signed value, sometimes an extreme one. */
static int64_t
pick_small(struct fuzz_input *in)
{
	uint8_t b = fuzz_u8(in);

	if (b == 0x7f)
		return INT64_MAX;
	if (b == 0x80)
		return INT64_MIN;
	return (int8_t)b % 7;
}

static int
pick_dim(struct fuzz_input *in)
{
	return (int8_t)fuzz_u8(in) % 6;
}

static double
pick_value(struct fuzz_input *in)
{
	return (double)((int8_t)fuzz_u8(in) % 8);
}

/* An element of from_data: the small integer of pick_value, k % 8 for
 * the byte k (as int8), times 2^e, where m = |k| / 8 gives e = 0, 2, -2,
 * 4, -4, ..., 16, -16: bytes -7 to 7 give the integers alone, others
 * values of either sign from 2^-14 to 7 * 2^16, whose sums round and
 * cancel, so that the order of a sum's additions shows (issue 36). */
static double
pick_data(struct fuzz_input *in)
{
	int k = (int8_t)fuzz_u8(in), m = (k < 0 ? -k : k) / 8;

	return ldexp((double)(k % 8), m % 2 == 1 ? m + 1 : -m);
}

static void
pick_shape(struct fuzz_input *in, struct op *o, int max_ndim)
{
	o->ndim = fuzz_u8(in) % (max_ndim + 1);
	for (int d = 0; d < o->ndim; d++)
		o->sizes[d] = pick_size(in);
}

static void
decode_view(struct fuzz_input *in, struct op *o)
{
	o->sub = fuzz_u8(in) % VK_COUNT;
	switch (o->sub) {
	case VK_VIEW:
	case VK_EXPAND:
		pick_shape(in, o, 5);
		break;
	case VK_SELECT:
	case VK_UNSQUEEZE:
	case VK_SQUEEZE:
		o->x = pick_dim(in);
		o->y = pick_small(in);
		break;
	case VK_SLICE:
	case VK_NARROW:
		o->x = pick_dim(in);
		o->y = pick_small(in);
		o->z = pick_small(in);
		o->step = pick_small(in);
		break;
	case VK_TRANSPOSE:
		o->x = pick_dim(in);
		o->y = pick_dim(in);
		break;
	case VK_PERMUTE:
		o->ndim = fuzz_u8(in) % 6;
		for (int d = 0; d < o->ndim; d++)
			o->perm[d] = pick_dim(in);
		break;
	case VK_DIAGONAL:
		o->z = pick_small(in);
		o->x = pick_dim(in);
		o->y = pick_dim(in);
		break;
	case VK_AS_STRIDED:
		pick_shape(in, o, 4);
		for (int d = 0; d < o->ndim; d++)
			o->strides[d] = fuzz_u8(in) % 6;
		o->z = fuzz_u8(in) % 10;
		break;
	default:
		break;
	}
}

static void
decode(struct fuzz_input *in, struct op *o)
{
	memset(o, 0, sizeof *o);
	o->kind = fuzz_u8(in) % OP_COUNT;
	o->dst = pick_slot(in);
	switch (o->kind) {
	case OP_CREATE:
		o->sub = fuzz_u8(in) % 4; /* zeros, full, arange, from_data */
		o->dtype = fuzz_u8(in) % COW_DTYPE_COUNT;
		pick_shape(in, o, 4);
		o->value = pick_value(in);
		if (o->sub == 3) {
			int64_t n = 1;

			for (int d = 0; d < o->ndim; d++)
				n *= o->sizes[d] < 0 ? 0 : o->sizes[d];
			for (int64_t k = 0; k < n && k < MAX_NUMEL; k++)
				o->data[k] = pick_data(in);
		}
		break;
	case OP_VIEW:
		o->a = pick_slot(in);
		decode_view(in, o);
		break;
	case OP_RESHAPE:
		o->a = pick_slot(in);
		o->sub = fuzz_u8(in) % 2; /* alias, lazy copy */
		pick_shape(in, o, 5);
		break;
	case OP_LAZY_CLONE:
	case OP_CLONE:
	case OP_NEG:
		o->a = pick_slot(in);
		break;
	case OP_SCALAR_:
		o->sub = fuzz_u8(in) % 3; /* fill_, add_scalar_, mul_scalar_ */
		o->value = pick_value(in);
		break;
	case OP_BINARY_:
		o->a = pick_slot(in);
		/* add_, mul_, copy_, sub_, div_, floor_div_, mod_ */
		o->sub = fuzz_u8(in) % 7;
		break;
	case OP_SET:
		o->ndim = fuzz_u8(in) % (MAXD + 1);
		for (int d = 0; d < o->ndim; d++)
			o->sizes[d] = pick_small(in); /* the index */
		o->value = pick_value(in);
		break;
	case OP_BINARY:
	case OP_EQUAL:
		o->a = pick_slot(in);
		o->b = pick_slot(in);
		/* add, mul, sub, div, floor_div, mod, eq, ne, lt, le, gt, ge,
		 * matmul */
		o->sub = fuzz_u8(in) % 13;
		break;
	case OP_SUM:
		o->a = pick_slot(in);
		o->sub = fuzz_u8(in) % 3; /* all, dim, dim keepdim */
		o->x = pick_dim(in);
		break;
	case OP_TRANSPOSE_:
		o->x = pick_dim(in);
		o->y = pick_dim(in);
		break;
	case OP_FAULT:
		o->world = 1 + fuzz_u8(in) % 2;
		o->nth = 1 + fuzz_u8(in) % 16;
		break;
	case OP_STORAGE:
		/* STORE DTYPE N SLACK VALUES..: N elements of DTYPE, then
		 * SLACK more bytes (0..3, zero) */
		o->a = fuzz_u8(in) % STORES;
		o->dtype = fuzz_u8(in) % COW_DTYPE_COUNT;
		o->x = fuzz_u8(in) % (MAX_STORE_ELEMS + 1);
		o->y = fuzz_u8(in) % 4;
		for (int64_t k = 0; k < o->x; k++)
			o->data[k] = pick_value(in);
		break;
	case OP_FROM_STORAGE:
		/* STORE DTYPE FLAGS NDIM SIZES.. [STRIDES..] OFFSET; FLAGS
		 * bit 0: explicit strides, bit 1: the storage's own dtype */
		o->a = fuzz_u8(in) % STORES;
		o->dtype = fuzz_u8(in) % COW_DTYPE_COUNT;
		o->sub = fuzz_u8(in) % 4;
		pick_shape(in, o, 4);
		if (o->sub & 1)
			for (int d = 0; d < o->ndim; d++)
				o->strides[d] = fuzz_u8(in) % 6;
		o->z = fuzz_u8(in) % 10;
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Execution in one world.                                              */

static void
enter_world(int w)
{
	(void)cow_backend_set_thread(w == 2 ? cow_backend_opaque_test() :
	    cow_backend_strided(), NULL);
	(void)cow_functional_mode_set_thread(w == 1, NULL);
}

static cow_status_t
exec_view(const struct op *o, cow_tensor_t *t, cow_tensor_t **out)
{
	switch (o->sub) {
	case VK_VIEW:
		return cow_tensor_view(t, o->ndim, o->sizes, out);
	case VK_SELECT:
		return cow_tensor_select(t, (int)o->x, o->y, out);
	case VK_SLICE:
		return cow_tensor_slice(t, (int)o->x, o->y, o->z, o->step,
		    out);
	case VK_NARROW:
		return cow_tensor_narrow(t, (int)o->x, o->y, o->z, out);
	case VK_TRANSPOSE:
		return cow_tensor_transpose(t, (int)o->x, (int)o->y, out);
	case VK_PERMUTE:
		return cow_tensor_permute(t, o->ndim, o->perm, out);
	case VK_UNSQUEEZE:
		return cow_tensor_unsqueeze(t, (int)o->x, out);
	case VK_SQUEEZE:
		return cow_tensor_squeeze(t, (int)o->x, out);
	case VK_SQUEEZE_ALL:
		return cow_tensor_squeeze_all(t, out);
	case VK_EXPAND:
		return cow_tensor_expand(t, o->ndim, o->sizes, out);
	case VK_DIAGONAL:
		return cow_tensor_diagonal(t, o->z, (int)o->x, (int)o->y, out);
	default:
		return cow_tensor_as_strided(t, o->ndim, o->sizes, o->strides,
		    o->z, out);
	}
}

/* Element value @v in @dtype at @p (the caller's bytes of from_data and
 * of a storage), encoded by the tensor reference's rules (tensor_model.h). */
static void
put_element(cow_dtype_t dtype, unsigned char *p, double v)
{
	tm_encode(dtype, p, tm_from_double(dtype, v));
}

/* A storage of o->x elements of o->dtype (values o->data) and o->y more
 * bytes, from @alloc. */
static cow_status_t
exec_storage(const struct op *o, cow_allocator_t *alloc, cow_storage_t **out)
{
	size_t isz = cow_dtype_size(o->dtype);
	cow_storage_t *s;
	unsigned char *p;
	cow_status_t st;

	if ((st = cow_storage_new((size_t)o->x * isz + (size_t)o->y, alloc,
	    &s)) != COW_OK)
		return st;
	if ((st = cow_storage_mutable_data(s, (void **)&p)) != COW_OK) {
		cow_storage_release(s);
		return st;
	}
	for (int64_t k = 0; k < o->x; k++)
		put_element(o->dtype, p + k * (int64_t)isz, o->data[k]);
	*out = s;
	return COW_OK;
}

static cow_status_t
exec_create(const struct op *o, cow_allocator_t *alloc, cow_tensor_t **out)
{
	int64_t n;
	cow_tensor_t *flat;
	cow_status_t st;

	switch (o->sub) {
	case 0:
		return cow_tensor_zeros(o->dtype, o->ndim, o->sizes, alloc,
		    out);
	case 1:
		return cow_tensor_full(o->dtype, o->ndim, o->sizes, o->value,
		    alloc, out);
	case 2:
		/* arange of the shape's element count, viewed as the shape */
		n = 1;
		for (int d = 0; d < o->ndim; d++)
			n *= o->sizes[d] < 0 ? 1 : o->sizes[d];
		if ((st = cow_tensor_arange(o->dtype, n, alloc, &flat)) !=
		    COW_OK)
			return st;
		st = cow_tensor_view(flat, o->ndim, o->sizes, out);
		cow_tensor_release(flat);
		return st;
	default: {
		/* from_data: the caller's bytes in the dtype (elements past
		 * MAX_NUMEL are 0; such a tensor is skipped anyway). Shapes
		 * are at most 4 dims of at most 9: n <= 6561. */
		size_t isz = cow_dtype_size(o->dtype);
		unsigned char *buf;

		n = 1;
		for (int d = 0; d < o->ndim; d++)
			n *= o->sizes[d] < 0 ? 0 : o->sizes[d];
		if ((buf = calloc((size_t)n + 1, isz)) == NULL)
			abort();
		for (int64_t k = 0; k < n && k < MAX_NUMEL; k++)
			put_element(o->dtype, buf + k * (int64_t)isz,
			    o->data[k]);
		st = cow_tensor_from_data(o->dtype, o->ndim, o->sizes, buf,
		    alloc, out);
		free(buf);
		return st;
	}
	}
}

/* The result of one operation in one world. */
struct result {
	cow_status_t st;
	bool eq;             /* equal's answer */
	cow_tensor_t *made;  /* a new tensor for slot dst (or NULL) */
	cow_storage_t *store; /* a new storage for store a (or NULL) */
};

static cow_tensor_t *
slot(const struct world *w, int i)
{
	return w->h[i];
}

/* Execute @o in world @wi. Tensor arguments may be NULL (empty slots):
 * every public function must then fail with COW_EINVAL. */
static struct result
exec(struct world *w, int wi, const struct op *o)
{
	struct result r = {COW_OK, false, NULL, NULL};
	cow_tensor_t *d = slot(w, o->dst), *a = slot(w, o->a),
	    *b = slot(w, o->b);
	cow_reshape_mode_t prev;

	enter_world(wi);
	switch (o->kind) {
	case OP_CREATE:
		r.st = exec_create(o, w->alloc, &r.made);
		break;
	case OP_VIEW:
		r.st = exec_view(o, a, &r.made);
		break;
	case OP_RESHAPE:
		(void)cow_reshape_mode_set_thread(o->sub == 0 ?
		    COW_RESHAPE_ALIAS : COW_RESHAPE_LAZY_COPY, &prev);
		r.st = cow_tensor_reshape(a, o->ndim, o->sizes, &r.made);
		(void)cow_reshape_mode_set_thread(prev, NULL);
		break;
	case OP_LAZY_CLONE:
		r.st = cow_tensor_lazy_clone(a, &r.made);
		break;
	case OP_CLONE:
		r.st = cow_tensor_clone(a, &r.made);
		break;
	case OP_SCALAR_:
		r.st = o->sub == 0 ? cow_tensor_fill_(d, o->value) :
		    o->sub == 1 ? cow_tensor_add_scalar_(d, o->value) :
		    cow_tensor_mul_scalar_(d, o->value);
		break;
	case OP_BINARY_:
		r.st = binary_in[o->sub](d, a);
		break;
	case OP_SET:
		r.st = cow_tensor_set_f64(d, o->sizes, o->value);
		break;
	case OP_BINARY:
		r.st = binary_out[o->sub](a, b, &r.made);
		break;
	case OP_NEG:
		r.st = cow_tensor_neg(a, &r.made);
		break;
	case OP_SUM:
		r.st = o->sub == 0 ? cow_tensor_sum(a, &r.made) :
		    cow_tensor_sum_dim(a, (int)o->x, o->sub == 2, &r.made);
		break;
	case OP_EQUAL:
		r.st = cow_tensor_equal(a, b, &r.eq);
		break;
	case OP_STORAGE:
		r.st = exec_storage(o, w->alloc, &r.store);
		break;
	case OP_FROM_STORAGE:
		r.st = cow_tensor_from_storage(w->store[o->a], o->dtype,
		    o->ndim, o->sizes, (o->sub & 1) ? o->strides : NULL, o->z,
		    &r.made);
		break;
	case OP_TRANSPOSE_:
		if (wi != 0) {
			r.st = cow_functional_transpose_(d, (int)o->x,
			    (int)o->y);
			break;
		}
		/* Plain metadata is immutable: the plain world swaps the
		 * handle for the transposed view. */
		if ((r.st = cow_tensor_transpose(d, (int)o->x, (int)o->y,
		    &r.made)) == COW_OK) {
			cow_tensor_release(w->h[o->dst]);
			w->h[o->dst] = r.made;
			r.made = NULL;
		}
		break;
	default:
		break;
	}
	enter_world(0);
	return r;
}

/* ------------------------------------------------------------------ */
/* Comparing worlds.                                                    */

/* The same double, bit for bit (-0 is not 0), or two NaNs. */
static bool
same_value(double x, double y)
{
	return (x == y && signbit(x) == signbit(y)) || (isnan(x) && isnan(y));
}

/* Read every value of @t (a read: syncs a functional tensor). */
static void
read_values(const struct fz *z, int wi, const cow_tensor_t *t, double *v,
    int64_t *iv)
{
	int64_t idx[MAXD] = {0}, k = 0;
	cow_status_t st;

	if (cow_tensor_numel(t) == 0)
		return;
	do {
		/* get_i64 too (when @iv): exact for every integer dtype,
		 * uint64 included, where get_f64 rounds. */
		if ((st = cow_tensor_get_f64(t, idx, &v[k])) != COW_OK ||
		    (iv != NULL &&
		    (st = cow_tensor_get_i64(t, idx, &iv[k])) != COW_OK))
			fail(z, "%s: reading element %lld: %s (%s)",
			    world_name[wi], (long long)k, cow_status_str(st),
			    cow_last_error());
		k++;
	} while (cow__shape_next_index(cow_tensor_ndim(t), cow_tensor_sizes(t),
	    idx));
}

/* The imaginary parts of the complex tensor @t, in row-major order, from
 * its bytes (no getter gives them): a functional tensor's read gives a
 * row-major copy, a plain one the address of element 0. */
static void
read_imag(const struct fz *z, int wi, const cow_tensor_t *t, double *im)
{
	int64_t idx[MAXD] = {0}, k = 0;
	cow_dtype_t dt = cow_tensor_dtype(t);
	int64_t isz = (int64_t)tm_dtype_size(dt);
	const char *p;
	cow_status_t st;
	float f;

	if (cow_tensor_numel(t) == 0)
		return;
	if ((st = cow_tensor_read_data(t, (const void **)&p)) != COW_OK)
		fail(z, "%s: reading the data: %s (%s)", world_name[wi],
		    cow_status_str(st), cow_last_error());
	do {
		int64_t off = k;

		if (!cow_tensor_is_functional(t))
			for (int d = off = 0; d < cow_tensor_ndim(t); d++)
				off += idx[d] * cow_tensor_strides(t)[d];
		if (dt == COW_DTYPE_COMPLEX64) {
			memcpy(&f, p + off * isz + 4, 4);
			im[k] = f;
		} else {
			memcpy(&im[k], p + off * isz + 8, 8);
		}
		k++;
	} while (cow__shape_next_index(cow_tensor_ndim(t), cow_tensor_sizes(t),
	    idx));
}

static void
compare_slot(const struct fz *z, int s)
{
	static double ref[MAX_NUMEL], got[MAX_NUMEL];
	static double imref[MAX_NUMEL], imgot[MAX_NUMEL];
	static int64_t iref[MAX_NUMEL], igot[MAX_NUMEL];
	const cow_tensor_t *t0 = z->w[0].h[s];

	for (int wi = 1; wi < WORLDS; wi++) {
		const cow_tensor_t *t = z->w[wi].h[s];

		if ((t == NULL) != (t0 == NULL))
			fail(z, "slot %d: empty in one world only", s);
		if (t == NULL)
			continue;
		if (!cow_tensor_is_functional(t))
			fail(z, "slot %d: %s tensor is plain", s,
			    world_name[wi]);
		if (cow_tensor_dtype(t) != cow_tensor_dtype(t0) ||
		    cow_tensor_ndim(t) != cow_tensor_ndim(t0))
			fail(z, "slot %d: dtype/ndim %d/%d, %s %d/%d", s,
			    cow_tensor_dtype(t0), cow_tensor_ndim(t0),
			    world_name[wi], cow_tensor_dtype(t),
			    cow_tensor_ndim(t));
		for (int d = 0; d < cow_tensor_ndim(t); d++) {
			int64_t n = cow_tensor_sizes(t0)[d];

			if (cow_tensor_sizes(t)[d] != n ||
			    (n > 1 && cow_tensor_strides(t)[d] !=
			    cow_tensor_strides(t0)[d]))
				fail(z, "slot %d: dim %d: size/stride "
				    "%lld/%lld, %s %lld/%lld", s, d,
				    (long long)n,
				    (long long)cow_tensor_strides(t0)[d],
				    world_name[wi],
				    (long long)cow_tensor_sizes(t)[d],
				    (long long)cow_tensor_strides(t)[d]);
		}
		if (cow_tensor_numel(t0) > 0 &&
		    cow_tensor_offset(t) != cow_tensor_offset(t0))
			fail(z, "slot %d: offset %lld, %s %lld", s,
			    (long long)cow_tensor_offset(t0), world_name[wi],
			    (long long)cow_tensor_offset(t));
		if (cow_tensor_is_contiguous(t) != cow_tensor_is_contiguous(t0))
			fail(z, "slot %d: contiguity differs in %s", s,
			    world_name[wi]);
		if (wi == 1)
			read_values(z, 0, t0, ref, iref);
		read_values(z, wi, t, got, igot);
		for (int64_t k = 0; k < cow_tensor_numel(t0); k++)
			if (!same_value(ref[k], got[k]) || iref[k] != igot[k])
				fail(z, "slot %d: element %lld is %.17g/%lld, "
				    "%s %.17g/%lld", s, (long long)k, ref[k],
				    (long long)iref[k], world_name[wi], got[k],
				    (long long)igot[k]);
		if (!tm_is_complex(cow_tensor_dtype(t0)))
			continue;
		if (wi == 1)
			read_imag(z, 0, t0, imref);
		read_imag(z, wi, t, imgot);
		for (int64_t k = 0; k < cow_tensor_numel(t0); k++)
			if (!same_value(imref[k], imgot[k]))
				fail(z, "slot %d: element %lld's imaginary "
				    "part is %.17g, %s %.17g", s, (long long)k,
				    imref[k], world_name[wi], imgot[k]);
	}
}

/* The @c-byte floating component at @p (float16, bfloat16, float32 or
 * float64 by @dtype, little-endian) is a NaN. */
static bool
component_is_nan(cow_dtype_t dtype, const unsigned char *p)
{
	uint16_t h;
	float f;
	double d;

	switch (dtype) {
	case COW_DTYPE_FLOAT16:
		memcpy(&h, p, 2);
		return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0;
	case COW_DTYPE_BFLOAT16:
		memcpy(&h, p, 2);
		return (h & 0x7f80) == 0x7f80 && (h & 0x007f) != 0;
	case COW_DTYPE_FLOAT32:
	case COW_DTYPE_COMPLEX64:
		memcpy(&f, p, 4);
		return isnan(f);
	default:
		memcpy(&d, p, 8);
		return isnan(d);
	}
}

/* Byte @k of storage @s differs between the images @a and @b (@n bytes)
 * only in a NaN's payload or sign: a floating dtype that a tensor over the
 * storage had (z->store_viewed) has a component there that is a NaN in
 * both. IEEE 754 leaves which operand's payload a NaN result carries to the
 * machine, and compilers may commute an addition's operands (a complex
 * product's imaginary part: ad + bc or bc + ad), so the worlds' kernels may
 * differ there; same_value() makes the same allowance for values. */
static bool
nan_payload_only(const struct fz *z, int s, const unsigned char *a,
    const unsigned char *b, size_t n, size_t k)
{
	for (cow_dtype_t dt = 0; dt < COW_DTYPE_COUNT; dt++) {
		size_t c, at;

		if (!(z->store_viewed[s] & 1u << dt) ||
		    (!tm_is_float(dt) && !tm_is_complex(dt)))
			continue;
		c = cow_dtype_size(dt) / (tm_is_complex(dt) ? 2 : 1);
		at = k / c * c;
		if (at + c <= n && component_is_nan(dt, a + at) &&
		    component_is_nan(dt, b + at))
			return true;
	}
	return false;
}

/* Every storage's bytes, read without any tensor: the same in every world
 * (the functional worlds write every mutation through to them), NaN
 * payloads aside (nan_payload_only(), which ends the comparisons). */
static void
compare_stores(struct fz *z)
{
	for (int s = 0; s < STORES; s++) {
		const cow_storage_t *s0 = z->w[0].store[s];

		for (int wi = 1; wi < WORLDS; wi++) {
			const cow_storage_t *x = z->w[wi].store[s];
			const unsigned char *a, *b;
			size_t n;

			if ((x == NULL) != (s0 == NULL) ||
			    cow_storage_nbytes(x) != cow_storage_nbytes(s0))
				fail(z, "storage %d: %s differs in size", s,
				    world_name[wi]);
			if ((n = cow_storage_nbytes(s0)) == 0)
				continue;
			a = cow_storage_const_data(s0);
			b = cow_storage_const_data(x);
			for (size_t k = 0; k < n; k++) {
				if (a[k] == b[k])
					continue;
				if (!nan_payload_only(z, s, a, b, n, k))
					fail(z, "storage %d: byte %zu is %#x, "
					    "%s %#x", s, k, a[k],
					    world_name[wi], b[k]);
				z->nan_diverged = true;
			}
		}
	}
}

/* Snapshot (or compare against one) every value and storage byte of
 * world @wi. */
struct snapshot {
	bool live[SLOTS];
	int64_t numel[SLOTS];
	double v[SLOTS][MAX_NUMEL];
	size_t nbytes[STORES];
	unsigned char bytes[STORES][MAX_STORE_BYTES];
};

static void
snapshot_take(const struct fz *z, int wi, struct snapshot *s)
{
	for (int i = 0; i < SLOTS; i++) {
		const cow_tensor_t *t = z->w[wi].h[i];

		s->live[i] = t != NULL;
		s->numel[i] = t != NULL ? cow_tensor_numel(t) : 0;
		if (t != NULL)
			read_values(z, wi, t, s->v[i], NULL);
	}
	for (int i = 0; i < STORES; i++) {
		const cow_storage_t *st = z->w[wi].store[i];

		s->nbytes[i] = cow_storage_nbytes(st);
		if (s->nbytes[i] > 0)
			memcpy(s->bytes[i], cow_storage_const_data(st),
			    s->nbytes[i]);
	}
}

static void
snapshot_check(const struct fz *z, int wi, const struct snapshot *s)
{
	static struct snapshot now;

	snapshot_take(z, wi, &now);
	for (int i = 0; i < SLOTS; i++) {
		if (now.live[i] != s->live[i] || now.numel[i] != s->numel[i])
			fail(z, "%s: a failed call changed slot %d",
			    world_name[wi], i);
		for (int64_t k = 0; k < now.numel[i]; k++)
			if (!same_value(now.v[i][k], s->v[i][k]))
				fail(z, "%s: a failed call changed slot %d "
				    "element %lld: %.17g to %.17g",
				    world_name[wi], i, (long long)k,
				    s->v[i][k], now.v[i][k]);
	}
	for (int i = 0; i < STORES; i++)
		if (now.nbytes[i] != s->nbytes[i] || (s->nbytes[i] > 0 &&
		    memcmp(now.bytes[i], s->bytes[i], s->nbytes[i]) != 0))
			fail(z, "%s: a failed call changed storage %d",
			    world_name[wi], i);
}

/* ------------------------------------------------------------------ */
/* One operation, every world.                                          */

static void
put(struct world *w, int s, cow_tensor_t *t)
{
	cow_tensor_release(w->h[s]);
	w->h[s] = t;
}

static void
put_store(struct world *w, int s, cow_storage_t *st)
{
	cow_storage_release(w->store[s]);
	w->store[s] = st;
}

/* Apply a successful result @r of @o to world @w. */
static void
commit(struct world *w, const struct op *o, struct result *r)
{
	if (r->made != NULL)
		put(w, o->dst, r->made);
	if (r->store != NULL)
		put_store(w, o->a, r->store);
	r->made = NULL;
	r->store = NULL;
}

/*
 * Does FROM_STORAGE @o meet a live tensor of another dtype over its
 * storage? In the plain world a tensor is over the storage if and only if
 * its functional twins are in the storage's alias group, so world 0 tells.
 */
static bool
store_conflict(const struct fz *z, const struct op *o)
{
	const cow_storage_t *s;

	if (o->kind != OP_FROM_STORAGE ||
	    (s = z->w[0].store[o->a]) == NULL)
		return false;
	for (int i = 0; i < SLOTS; i++) {
		const cow_tensor_t *t = z->w[0].h[i];

		if (t != NULL && cow_tensor_storage(t) == s &&
		    cow_tensor_dtype(t) != o->dtype)
			return true;
	}
	return false;
}

static void
run_op(struct fz *z, const struct op *o, int fault_world, unsigned nth)
{
	static struct snapshot before;
	bool conflict = store_conflict(z, o);
	cow_status_t want;
	struct result r0, r;

	z->what = op_name[o->kind];
	r0 = exec(&z->w[0], 0, o);
	/* The functional worlds' status: world 0's, except the documented
	 * refusal (see the top). */
	want = r0.st == COW_OK && conflict ? COW_EDTYPE : r0.st;
	if (verbose && want != r0.st)
		fprintf(stderr, "fuzz_functional: op %zu: another dtype over "
		    "a storage with live tensors: the functional worlds must "
		    "refuse it, then it is skipped\n", z->op);
	if (verbose)
		fprintf(stderr, "fuzz_functional: op %zu %s/%d dst %d a %d "
		    "b %d -> %s%s%s\n", z->op, op_name[o->kind], o->sub, o->dst,
		    o->a, o->b, cow_status_str(r0.st),
		    r0.st != COW_OK ? ": " : "",
		    r0.st != COW_OK ? cow_last_error() : "");
	if (r0.made != NULL && (cow_tensor_numel(r0.made) > MAX_NUMEL ||
	    want != r0.st)) {
		/* Too large to compare, or refused by the functional worlds:
		 * skipped everywhere (the refusal is checked, then undone). */
		cow_tensor_release(r0.made);
		r0.made = NULL;
		if (want == r0.st)
			return;
	}
	for (int wi = 1; wi < WORLDS; wi++) {
		struct world *w = &z->w[wi];

		if (fault_world == wi) {
			snapshot_take(z, wi, &before);
			w->cap.fail_in = nth;
			r = exec(w, wi, o);
			w->cap.fail_in = 0;
			if (r.st == COW_ENOMEM) {
				if (verbose)
					fprintf(stderr, "fuzz_functional: op "
					    "%zu: %s: allocation %u failed: "
					    "%s\n", z->op, world_name[wi], nth,
					    cow_last_error());
				if (r.made != NULL)
					fail(z, "%s: out written by a failed "
					    "call", world_name[wi]);
				snapshot_check(z, wi, &before);
				r = exec(w, wi, o);
			}
		} else {
			r = exec(w, wi, o);
		}
		if (r.st != want)
			fail(z, "status %s (%s), %s %s (%s)",
			    cow_status_str(r0.st), world_name[0],
			    world_name[wi], cow_status_str(r.st),
			    cow_last_error());
		if (want != r0.st && strstr(cow_last_error(), "functional "
		    "tensors of dtype") == NULL)
			fail(z, "%s: refused with '%s'", world_name[wi],
			    cow_last_error());
		if (o->kind == OP_EQUAL && r.eq != r0.eq)
			fail(z, "equal is %d, %s %d", r0.eq, world_name[wi],
			    r.eq);
		if ((r.made == NULL) != (r0.made == NULL))
			fail(z, "a result in one world only");
		commit(w, o, &r);
	}
	if (r0.store != NULL)
		z->store_viewed[o->a] = 0;
	if (o->kind == OP_FROM_STORAGE && r0.made != NULL)
		z->store_viewed[o->a] |= 1u << o->dtype;
	commit(&z->w[0], o, &r0);
	compare_stores(z);
	if (o->kind == OP_CHECK)
		compare_slot(z, o->dst);
}

/* ------------------------------------------------------------------ */

static void
check_trace(cow_functional_trace_t *tr)
{
	if (!cow_functional_trace_complete(tr)) {
		fprintf(stderr, "fuzz_functional: trace incomplete\n");
		abort();
	}
	for (size_t i = 0; i < cow_functional_trace_length(tr); i++) {
		const char *l = cow_functional_trace_line(tr, i);

		if (l[0] != '%' || strstr(l, " = ") == NULL) {
			fprintf(stderr, "fuzz_functional: trace line %zu "
			    "'%s'\n", i, l);
			abort();
		}
	}
	cow_functional_trace_free(tr);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz z;
	static struct op o;
	struct fuzz_input in = {data, size};
	cow_functional_trace_t *tr = NULL;
	bool tracing;
	int fault_world = 0;
	unsigned nth = 0;

	verbose = getenv("FUZZ_FUNCTIONAL_TRACE") != NULL;
	memset(&z, 0, sizeof z);
	for (int wi = 0; wi < WORLDS; wi++)
		if (cow_allocator_new(&cap_ops, &z.w[wi].cap, "capped",
		    &z.w[wi].alloc) != COW_OK)
			abort();
	tracing = (fuzz_u8(&in) & 1) != 0;
	if (tracing && cow_functional_trace_start() != COW_OK)
		abort();
	for (z.op = 0; z.op < MAX_OPS && fuzz_more(&in) && !z.nan_diverged;
	    z.op++) {
		decode(&in, &o);
		if (o.kind == OP_FAULT) {
			fault_world = o.world;
			nth = o.nth;
			continue;
		}
		if (o.kind == OP_RELEASE) {
			for (int wi = 0; wi < WORLDS; wi++)
				put(&z.w[wi], o.dst, NULL);
			compare_stores(&z);
			continue;
		}
		if (o.kind == OP_FROM_STORAGE && (o.sub & 2))
			o.dtype = z.store_dtype[o.a];
		if (o.kind == OP_STORAGE)
			z.store_dtype[o.a] = o.dtype;
		/* An armed failure applies to this operation only. */
		run_op(&z, &o, fault_world, nth);
		fault_world = 0;
	}
	z.what = "the end";
	if (z.nan_diverged && verbose)
		fprintf(stderr, "fuzz_functional: op %zu: a NaN's payload "
		    "differs between the worlds (ops.h leaves it unspecified): "
		    "the rest of the input is not run\n", z.op - 1);
	for (int s = 0; s < SLOTS && !z.nan_diverged; s++)
		compare_slot(&z, s);
	/* Every tensor released: the storages hold every write. */
	for (int wi = 0; wi < WORLDS; wi++)
		for (int s = 0; s < SLOTS; s++)
			put(&z.w[wi], s, NULL);
	z.what = "the last release";
	if (!z.nan_diverged)
		compare_stores(&z);
	for (int wi = 0; wi < WORLDS; wi++) {
		cow_alloc_stats_t st;

		for (int s = 0; s < STORES; s++)
			put_store(&z.w[wi], s, NULL);
		if (cow_allocator_stats(z.w[wi].alloc, &st) != COW_OK ||
		    st.live_bytes != 0) {
			fprintf(stderr, "fuzz_functional: %s leaked %llu "
			    "bytes\n", world_name[wi],
			    (unsigned long long)st.live_bytes);
			abort();
		}
		if (cow_allocator_destroy(z.w[wi].alloc) != COW_OK)
			abort();
	}
	if (tracing) {
		if (cow_functional_trace_stop(&tr) != COW_OK)
			abort();
		check_trace(tr);
	}
	return 0;
}
