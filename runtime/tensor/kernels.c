/*
 * kernels.c - the out-of-place kernels behind every op (see kernels.h for
 * the contract every kernel keeps).
 */
#include <string.h>

#include "core/error.h"
#include "tensor/dtype.h"
#include "tensor/iter.h"
#include "tensor/kernels.h"
#include "tensor/loops.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"
#include "tensor/transpose.h"

/* An input as the kernel reads it. */
struct input {
	const cow_tensor_t *t;  /* the input, or its temporary copy */
	cow_tensor_t *tmp;      /* the temporary (released after the op) */
	const char *data;       /* read address of element [0, ..., 0] */
	/* Strides presenting t with the destination's shape (0 where it is
	 * broadcast); unused by the sum kernel. */
	int64_t strides[COW_TENSOR_MAX_NDIM];
};

static cow_status_t
dtype_mismatch(cow_dtype_t a, cow_dtype_t b, const char *what)
{
	return cow__error(COW_EDTYPE, "%s: dtypes %s and %s differ "
	    "(no type promotion)", what, cow_dtype_name(a), cow_dtype_name(b));
}

/* Largest element offset a non-empty tensor reaches from its offset. */
static int64_t
extent(const cow_tensor_t *t)
{
	int64_t e = 0;

	for (int d = 0; d < t->ndim; d++)
		e += t->strides[d] * (t->sizes[d] - 1);
	return e;
}

/*
 * Could reading @in while writing @dst read an element the op has already
 * written? Only when they view one storage and their bytes overlap, and the
 * element mapping differs (@bs: @in's strides broadcast to @dst's shape;
 * NULL when the shapes differ, as in a reduction).
 */
static bool
input_conflicts(const cow_tensor_t *in, const int64_t *bs,
    const cow_tensor_t *dst)
{
	int64_t ilo, ihi, dlo, dhi;
	bool same;

	if (in->storage != dst->storage || in->numel == 0 || dst->numel == 0)
		return false;
	ilo = in->offset * (int64_t)in->itemsize;
	ihi = (in->offset + extent(in) + 1) * (int64_t)in->itemsize;
	dlo = dst->offset * (int64_t)dst->itemsize;
	dhi = (dst->offset + extent(dst) + 1) * (int64_t)dst->itemsize;
	if (ihi <= dlo || dhi <= ilo)
		return false;
	if (bs == NULL)
		return true;
	/* Same bytes for every index: each element is read just before the
	 * same element is written, which is safe. */
	same = in->itemsize == dst->itemsize && ilo == dlo;
	for (int d = 0; d < dst->ndim && same; d++)
		if (dst->sizes[d] > 1)
			same = bs[d] == dst->strides[d];
	return !same;
}

/* Validation only: broadcast @t to @dst's shape. */
static cow_status_t
input_broadcast(struct input *in, const cow_tensor_t *t,
    const cow_tensor_t *dst)
{
	in->t = t;
	in->tmp = NULL;
	return cow__broadcast_strides(t->ndim, t->sizes, t->strides, dst->ndim,
	    dst->sizes, in->strides);
}

/* Read from a temporary copy when reading in place would conflict. */
static cow_status_t
input_detach(struct input *in, const cow_tensor_t *dst, bool same_shape,
    const char *func)
{
	const cow_tensor_t *t = in->t;
	cow_status_t st;

	if (!input_conflicts(t, same_shape ? in->strides : NULL, dst))
		return COW_OK;
	if ((st = cow__kernel_clone(t, &in->tmp, func)) != COW_OK)
		return st;
	in->t = in->tmp;
	if (same_shape)
		(void)cow__broadcast_strides(t->ndim, in->tmp->sizes,
		    in->tmp->strides, dst->ndim, dst->sizes, in->strides);
	return COW_OK;
}

/* The read access for an input (after any detach). */
static cow_status_t
input_read(struct input *in, const char *func)
{
	return cow__tensor_read_data(in->t, &in->data, func);
}

/* After the destination's write access: inputs viewing its storage read
 * from the (possibly moved) data. */
static void
input_rebase(struct input *in, const cow_tensor_t *dst,
    const char *dst_data)
{
	in->data = cow__tensor_rebase(in->t, in->data, dst, dst_data);
}

static void
input_done(struct input *in)
{
	cow_tensor_release(in->tmp);
	in->tmp = NULL;
}

/* The end of a kernel's access: its temporaries go. */
static void
kernel_end(struct input *in, int n)
{
	for (int i = 0; i < n; i++)
		input_done(&in[i]);
}

/*
 * The access protocol of a kernel that writes @dst from the @n inputs @in
 * (validated, broadcast when @same_shape), in the order tensor.h
 * prescribes: the writability check; a temporary copy of each input whose
 * in-place reading would conflict with the writes; every read access
 * (they have no side effect, so a refused read changes nothing); the
 * write access of @dst, whose element 0 goes to *@p; then every input
 * that views @dst's storage re-based on the address the write access
 * returned. On failure everything is as it was. kernel_end() after the
 * loops.
 */
static cow_status_t
kernel_begin(cow_tensor_t *dst, struct input *in, int n, bool same_shape,
    char **p, const char *func)
{
	cow_status_t st;
	int i;

	if ((st = cow__check_writable(dst)) != COW_OK)
		return st;
	for (i = 0; i < n && st == COW_OK; i++)
		st = input_detach(&in[i], dst, same_shape, func);
	for (i = 0; i < n && st == COW_OK; i++)
		st = input_read(&in[i], func);
	if (st == COW_OK)
		st = cow__tensor_write_data(dst, p, func);
	if (st != COW_OK) {
		kernel_end(in, n);
		return st;
	}
	for (i = 0; i < n; i++)
		input_rebase(&in[i], dst, *p);
	return COW_OK;
}

cow_status_t
cow__kernel_fill(cow_tensor_t *dst, double value, const char *func)
{
	size_t size = dst->itemsize;
	cow__scalar_t v;
	cow__iter_t it;
	cow_status_t st;
	char *p;

	if (dst->numel == 0)
		return COW_OK;
	if ((st = kernel_begin(dst, NULL, 0, true, &p, func)) != COW_OK)
		return st;
	cow__store_f64(dst->dtype, &v, value);
	cow__iter_init(&it, dst->ndim, dst->sizes);
	cow__iter_add(&it, p, dst->strides, dst->itemsize);
	cow__iter_add(&it, &v, NULL, dst->itemsize);
	cow__iter_run(&it, cow__loop_copy_same, &size);
	return COW_OK;
}

/*
 * A transposing copy: the destination and the source each dense along a
 * different one of two dimensions (every other dimension of size 1), as
 * in copy_(d, a.T), which transpose.c copies in tiles. Same dtype,
 * elements of 1, 2, 4 or 8 bytes, at least 32 x 32 (below that the
 * iterator's loops are as fast); false: not such a copy.
 */
static bool
copy_transposed(char *p, const cow_tensor_t *dst, const char *q,
    const int64_t *src_strides)
{
	int dims[2], k = 0;
	int64_t rows, cols, d0, d1, s0, s1;

	if (dst->itemsize != 1 && dst->itemsize != 2 && dst->itemsize != 4 &&
	    dst->itemsize != 8)
		return false;
	for (int d = 0; d < dst->ndim; d++) {
		if (dst->sizes[d] == 1)
			continue;
		if (k == 2)
			return false;
		dims[k++] = d;
	}
	if (k != 2)
		return false;
	rows = dst->sizes[dims[0]];
	cols = dst->sizes[dims[1]];
	d0 = dst->strides[dims[0]];
	d1 = dst->strides[dims[1]];
	s0 = src_strides[dims[0]];
	s1 = src_strides[dims[1]];
	if (rows < 32 || cols < 32)
		return false;
	if (d1 == 1 && s0 == 1)
		cow__transpose(p, d0, q, s1, rows, cols, dst->itemsize);
	else if (d0 == 1 && s1 == 1)
		cow__transpose(p, d1, q, s0, cols, rows, dst->itemsize);
	else
		return false;
	return true;
}

cow_status_t
cow__kernel_copy(cow_tensor_t *dst, const cow_tensor_t *src, const char *func)
{
	struct cow__convert_arg conv = {dst->dtype, src->dtype};
	size_t size = dst->itemsize;
	struct input in;
	cow__iter_t it;
	cow_status_t st;
	char *p;

	if ((st = input_broadcast(&in, src, dst)) != COW_OK)
		return st;
	if (dst->numel == 0)
		return COW_OK;
	if ((st = kernel_begin(dst, &in, 1, true, &p, func)) != COW_OK)
		return st;
	if (dst->dtype == src->dtype &&
	    copy_transposed(p, dst, in.data, in.strides)) {
		kernel_end(&in, 1);
		return COW_OK;
	}
	cow__iter_init(&it, dst->ndim, dst->sizes);
	cow__iter_add(&it, p, dst->strides, dst->itemsize);
	cow__iter_add(&it, in.data, in.strides, in.t->itemsize);
	if (dst->dtype == src->dtype)
		cow__iter_run(&it, cow__loop_copy_same, &size);
	else
		cow__iter_run(&it, cow__loop_convert, &conv);
	kernel_end(&in, 1);
	return COW_OK;
}

cow_status_t
cow__kernel_clone(const cow_tensor_t *t, cow_tensor_t **out, const char *func)
{
	cow_tensor_t *c;
	cow_status_t st;

	if ((st = cow__tensor_new_output(t->dtype, t->ndim, t->sizes,
	    cow__tensor_allocator(t), &c)) != COW_OK)
		return st;
	if ((st = cow__kernel_copy(c, t, func)) != COW_OK) {
		cow_tensor_release(c);
		return st;
	}
	*out = c;
	return COW_OK;
}

static const struct {
	const char *name;
	const cow__iter_fn *loops;
} binops[] = {
	[COW__BINOP_ADD] = {"add", cow__loops_add},
	[COW__BINOP_MUL] = {"mul", cow__loops_mul},
	[COW__BINOP_SUB] = {"sub", cow__loops_sub},
	[COW__BINOP_DIV] = {"div", cow__loops_div},
	[COW__BINOP_FLOOR_DIV] = {"floor_div", cow__loops_floor_div},
	[COW__BINOP_MOD] = {"mod", cow__loops_mod},
	[COW__BINOP_EQ] = {"eq", cow__loops_eq},
	[COW__BINOP_NE] = {"ne", cow__loops_ne},
	[COW__BINOP_LT] = {"lt", cow__loops_lt},
	[COW__BINOP_LE] = {"le", cow__loops_le},
	[COW__BINOP_GT] = {"gt", cow__loops_gt},
	[COW__BINOP_GE] = {"ge", cow__loops_ge},
};

const char *
cow__binop_name(enum cow__binop op)
{
	return binops[op].name;
}

cow_dtype_t
cow__binop_result_dtype(enum cow__binop op, cow_dtype_t dtype)
{
	if (op >= COW__BINOP_EQ)
		return COW_DTYPE_BOOL;
	if (op == COW__BINOP_DIV && !cow__dtype_is_float(dtype) &&
	    !cow__dtype_is_complex(dtype))
		return COW_DTYPE_FLOAT64;
	return dtype;
}

cow_status_t
cow__binop_check(enum cow__binop op, cow_dtype_t dtype)
{
	if (binops[op].loops[dtype] == NULL)
		return cow__error(COW_EDTYPE, "%s is not defined for "
		    "dtype %s", binops[op].name, cow_dtype_name(dtype));
	return COW_OK;
}

cow_status_t
cow__binop_check_inplace(enum cow__binop op, cow_dtype_t dtype)
{
	cow_status_t st;

	if ((st = cow__binop_check(op, dtype)) != COW_OK)
		return st;
	if (cow__binop_result_dtype(op, dtype) != dtype)
		return cow__error(COW_EDTYPE, "%s of dtype %s writes "
		    "%s, which a destination of dtype %s cannot hold (no "
		    "in-place form)", binops[op].name, cow_dtype_name(dtype),
		    cow_dtype_name(cow__binop_result_dtype(op, dtype)),
		    cow_dtype_name(dtype));
	return COW_OK;
}

cow_status_t
cow__kernel_binary(enum cow__binop op, cow_tensor_t *dst,
    const cow_tensor_t *a, const cow_tensor_t *b, const char *func)
{
	struct input in[2];
	cow__iter_t it;
	cow_status_t st;
	char *p;

	if (a->dtype != b->dtype)
		return dtype_mismatch(a->dtype, b->dtype, "operands");
	if ((st = cow__binop_check(op, a->dtype)) != COW_OK)
		return st;
	if (dst->dtype != cow__binop_result_dtype(op, a->dtype))
		return dtype_mismatch(dst->dtype,
		    cow__binop_result_dtype(op, a->dtype),
		    "destination and operands");
	if ((st = input_broadcast(&in[0], a, dst)) != COW_OK ||
	    (st = input_broadcast(&in[1], b, dst)) != COW_OK)
		return st;
	if (dst->numel == 0)
		return COW_OK;
	if ((st = kernel_begin(dst, in, 2, true, &p, func)) != COW_OK)
		return st;
	cow__iter_init(&it, dst->ndim, dst->sizes);
	cow__iter_add(&it, p, dst->strides, dst->itemsize);
	cow__iter_add(&it, in[0].data, in[0].strides, a->itemsize);
	cow__iter_add(&it, in[1].data, in[1].strides, b->itemsize);
	cow__iter_run(&it, binops[op].loops[a->dtype], NULL);
	kernel_end(in, 2);
	return COW_OK;
}

cow_status_t
cow__kernel_binary_scalar(enum cow__binop op, cow_tensor_t *dst,
    const cow_tensor_t *a, double value, const char *func)
{
	const cow__iter_fn *loops = binops[op].loops;
	struct input ia;
	cow__scalar_t v;
	cow__iter_t it;
	cow_status_t st;
	char *p;

	if (dst->dtype != a->dtype)
		return dtype_mismatch(dst->dtype, a->dtype,
		    "destination and operand");
	if ((st = input_broadcast(&ia, a, dst)) != COW_OK)
		return st;
	if (dst->numel == 0)
		return COW_OK;
	if ((st = kernel_begin(dst, &ia, 1, true, &p, func)) != COW_OK)
		return st;
	cow__store_f64(a->dtype, &v, value);
	cow__iter_init(&it, dst->ndim, dst->sizes);
	cow__iter_add(&it, p, dst->strides, dst->itemsize);
	cow__iter_add(&it, ia.data, ia.strides, a->itemsize);
	cow__iter_add(&it, &v, NULL, a->itemsize);
	cow__iter_run(&it, loops[dst->dtype], NULL);
	kernel_end(&ia, 1);
	return COW_OK;
}

cow_status_t
cow__kernel_neg(cow_tensor_t *dst, const cow_tensor_t *a, const char *func)
{
	struct input ia;
	cow__iter_t it;
	cow_status_t st;
	char *p;

	if (cow__loops_neg[a->dtype] == NULL)
		return cow__error(COW_EDTYPE,
		    "negation is not defined for dtype %s",
		    cow_dtype_name(a->dtype));
	if (dst->dtype != a->dtype)
		return dtype_mismatch(dst->dtype, a->dtype,
		    "destination and operand");
	if ((st = input_broadcast(&ia, a, dst)) != COW_OK)
		return st;
	if (dst->numel == 0)
		return COW_OK;
	if ((st = kernel_begin(dst, &ia, 1, true, &p, func)) != COW_OK)
		return st;
	cow__iter_init(&it, dst->ndim, dst->sizes);
	cow__iter_add(&it, p, dst->strides, dst->itemsize);
	cow__iter_add(&it, ia.data, ia.strides, a->itemsize);
	cow__iter_run(&it, cow__loops_neg[a->dtype], NULL);
	kernel_end(&ia, 1);
	return COW_OK;
}

cow_dtype_t
cow__sum_dtype(cow_dtype_t dtype)
{
	switch (dtype) {
	case COW_DTYPE_UINT16:
	case COW_DTYPE_UINT32:
	case COW_DTYPE_UINT64:
		return COW_DTYPE_UINT64;
	case COW_DTYPE_BOOL:
	case COW_DTYPE_INT8:
	case COW_DTYPE_UINT8:
	case COW_DTYPE_INT16:
	case COW_DTYPE_INT32:
	case COW_DTYPE_INT64:
		return COW_DTYPE_INT64;
	default:
		return dtype;
	}
}

cow_dtype_t
cow__sum_acc_dtype(cow_dtype_t dtype)
{
	if (dtype == COW_DTYPE_FLOAT16 || dtype == COW_DTYPE_BFLOAT16)
		return COW_DTYPE_FLOAT32;
	return cow__sum_dtype(dtype);
}

int64_t
cow__sum_run(int ndim, const int64_t *sizes, const int64_t *strides)
{
	int64_t run = 1, stride = 0, next;
	bool first = true;

	for (int d = ndim - 1; d >= 0; d--) {
		if (sizes[d] == 1)
			continue;
		if (first)
			stride = strides[d];
		else if (__builtin_mul_overflow(stride, run, &next) ||
		    strides[d] != next)
			break;
		first = false;
		run *= sizes[d];
	}
	return run;
}

/*
 * Strides (in elements of dst) that walk dst while iterating over a's
 * shape: 0 on reduced dimensions. dst's shape must be a's with the reduced
 * dimensions kept as 1 or removed.
 */
static cow_status_t
sum_strides(const cow_tensor_t *dst, const cow_tensor_t *a, uint32_t mask,
    int64_t *out)
{
	char sa[COW__SHAPE_STR_MAX], sd[COW__SHAPE_STR_MAX];
	bool keep = dst->ndim == a->ndim, ok = true;
	int k = 0;

	for (int d = 0; d < a->ndim && ok; d++) {
		bool reduced = (mask >> d) & 1u;

		if (reduced && !keep) {
			out[d] = 0;
			continue;
		}
		if (k >= dst->ndim) {
			ok = false;
			break;
		}
		if (reduced) {
			ok = dst->sizes[k] == 1;
			out[d] = 0;
		} else {
			ok = dst->sizes[k] == a->sizes[d];
			out[d] = dst->strides[k];
		}
		k++;
	}
	if (ok && k == dst->ndim)
		return COW_OK;
	return cow__error(COW_ESHAPE,
	    "destination shape %s does not match the reduction of %s",
	    cow__shape_str(sd, dst->ndim, dst->sizes),
	    cow__shape_str(sa, a->ndim, a->sizes));
}

/* Zero every element of @t (contiguous or not) at @p. */
static void
zero_all(cow_tensor_t *t, char *p)
{
	size_t size = t->itemsize;
	cow__scalar_t zero;
	cow__iter_t it;

	memset(&zero, 0, sizeof zero);
	cow__iter_init(&it, t->ndim, t->sizes);
	cow__iter_add(&it, p, t->strides, t->itemsize);
	cow__iter_add(&it, &zero, NULL, t->itemsize);
	cow__iter_run(&it, cow__loop_copy_same, &size);
}

/*
 * float16 and bfloat16 sums accumulate in float32 and round once at the
 * end: into a float32 scratch of dst's shape (@acc, allocated before any
 * write), converted into dst afterwards. Other dtypes accumulate in dst.
 */
cow_status_t
cow__kernel_sum(cow_tensor_t *dst, const cow_tensor_t *a, uint32_t mask,
    int64_t run, const char *func)
{
	int64_t dstrides[COW_TENSOR_MAX_NDIM];
	struct cow__convert_arg conv = {dst->dtype, COW_DTYPE_FLOAT32};
	struct cow__sum_arg arg = {a->dtype, run};
	struct input ia = {a, NULL, NULL, {0}};
	cow_tensor_t *acc = dst, *scratch = NULL;
	cow__iter_t it;
	cow_status_t st;
	char *p, *q = NULL;

	if (dst->dtype != cow__sum_dtype(a->dtype))
		return cow__error(COW_EDTYPE,
		    "the sum of %s is %s, not %s", cow_dtype_name(a->dtype),
		    cow_dtype_name(cow__sum_dtype(a->dtype)),
		    cow_dtype_name(dst->dtype));
	if ((st = sum_strides(dst, a, mask, dstrides)) != COW_OK)
		return st;
	if (dst->numel == 0)
		return COW_OK;
	if (cow__sum_acc_dtype(a->dtype) != dst->dtype) {
		/* Refusals first: the scratch is the op's only allocation
		 * before its accesses. */
		if ((st = cow__check_writable(dst)) != COW_OK)
			return st;
		if ((st = cow__tensor_new_contiguous(COW_DTYPE_FLOAT32,
		    dst->ndim, dst->sizes, cow__tensor_allocator(dst),
		    &scratch)) != COW_OK)
			return st;
		acc = scratch;
		(void)sum_strides(acc, a, mask, dstrides);
		if ((st = cow__tensor_write_data(scratch, &q, func)) !=
		    COW_OK) {
			cow_tensor_release(scratch);
			return st;
		}
	}
	if ((st = kernel_begin(dst, &ia, 1, false, &p, func)) != COW_OK) {
		cow_tensor_release(scratch);
		return st;
	}
	if (scratch == NULL)
		q = p;
	zero_all(acc, q);
	if (a->numel > 0) {
		cow__iter_init(&it, a->ndim, a->sizes);
		cow__iter_add(&it, q, dstrides, acc->itemsize);
		cow__iter_add(&it, ia.data, ia.t->strides, a->itemsize);
		cow__iter_run(&it, cow__loop_sum, &arg);
	}
	if (scratch != NULL) {
		cow__iter_init(&it, dst->ndim, dst->sizes);
		cow__iter_add(&it, p, dst->strides, dst->itemsize);
		cow__iter_add(&it, q, scratch->strides, scratch->itemsize);
		cow__iter_run(&it, cow__loop_convert, &conv);
	}
	kernel_end(&ia, 1);
	cow_tensor_release(scratch);
	return COW_OK;
}

cow_status_t
cow__kernel_equal(const cow_tensor_t *a, const cow_tensor_t *b, bool *equal,
    const char *func)
{
	struct cow__equal_arg e = {a->dtype, true};
	const char *pa, *pb;
	cow__iter_t it;
	cow_status_t st;

	if (a->dtype != b->dtype)
		return dtype_mismatch(a->dtype, b->dtype, "operands");
	if (a->ndim != b->ndim) {
		*equal = false;
		return COW_OK;
	}
	for (int d = 0; d < a->ndim; d++) {
		if (a->sizes[d] != b->sizes[d]) {
			*equal = false;
			return COW_OK;
		}
	}
	if (a->numel > 0) {
		if ((st = cow__tensor_read_data(a, &pa, func)) != COW_OK ||
		    (st = cow__tensor_read_data(b, &pb, func)) != COW_OK)
			return st;
		cow__iter_init(&it, a->ndim, a->sizes);
		cow__iter_add(&it, pa, a->strides, a->itemsize);
		cow__iter_add(&it, pb, b->strides, b->itemsize);
		cow__iter_run(&it, cow__loop_equal, &e);
	}
	*equal = e.equal;
	return COW_OK;
}
