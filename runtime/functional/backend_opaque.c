/*
 * backend_opaque.c - a test backend that cannot alias (think of a texture
 * API or a compiler IR): a value is a contiguous row-major buffer that the
 * value owns. There are no strides, no views and no sharing: every op reads
 * whole buffers and returns a new one. It declares that it needs
 * functionalization, so every program on it goes through the layer.
 *
 * Its kernels are written here from the contracts of ops.h (index
 * arithmetic over row-major buffers), independently of the strided
 * kernels, so that running a program three ways compares two
 * implementations. Only the element conversions (dtype.h), shape helpers
 * and the sum's order (ops.h's rule: the strided kernels' iterator and sum
 * loop, o_sum) are shared.
 */
#include <math.h>
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "functional/functional.h"
#include "tensor/divmod.h"
#include "tensor/dtype.h"
#include "tensor/iter.h"
#include "tensor/kernels.h"
#include "tensor/loops.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

/* A new value with an uninitialised buffer for its shape. */
static cow_status_t
o_new(cow_allocator_t *alloc, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, struct cow__fval **out)
{
	struct cow__fval *v = cow__fval_new(&cow__backend_opaque, alloc, dtype,
	    ndim, sizes);

	if (v == NULL)
		return COW_ENOMEM;
	v->nbytes = (size_t)v->numel * v->itemsize;
	if (v->nbytes > 0 &&
	    (v->data = cow__alloc(alloc, v->nbytes)) == NULL) {
		cow__fval_free_struct(v);
		return COW_ENOMEM;
	}
	*out = v;
	return COW_OK;
}

static int64_t
dot(int ndim, const int64_t *idx, const int64_t *strides)
{
	int64_t off = 0;

	for (int d = 0; d < ndim; d++)
		off += idx[d] * strides[d];
	return off;
}

static cow_status_t
o_import(const cow_backend_t *be, cow_tensor_t *t, bool owned,
    struct cow__fval **out, const char *func)
{
	int64_t idx[COW__FN_MAXD] = {0};
	struct cow__fval *v;
	const char *p;
	cow_status_t st;

	(void)be;
	if ((st = o_new(cow__tensor_allocator(t), t->dtype, t->ndim,
	    t->sizes, &v)) != COW_OK)
		return st;
	if (v->numel > 0) {
		if ((st = cow__tensor_read_data(t, &p, func)) != COW_OK) {
			cow__fval_release(v);
			return st;
		}
		for (int64_t k = 0; k < v->numel; k++) {
			memcpy(v->data + k * (int64_t)v->itemsize,
			    p + dot(t->ndim, idx, t->strides) *
			    (int64_t)t->itemsize, v->itemsize);
			cow__shape_next_index(t->ndim, t->sizes, idx);
		}
	}
	if (owned)
		cow_tensor_release(t);
	*out = v;
	return COW_OK;
}

static cow_status_t
o_export(struct cow__fval *v, cow_tensor_t **out, const char *func)
{
	cow_tensor_t *t;
	cow_status_t st;
	char *p;

	if ((st = cow__tensor_new_contiguous(v->dtype, v->ndim, v->sizes,
	    v->alloc, &t)) != COW_OK)
		return st;
	if (v->numel > 0) {
		if ((st = cow__tensor_write_data(t, &p, func)) != COW_OK) {
			cow_tensor_release(t);
			return st;
		}
		memcpy(p, v->data, v->nbytes);
	}
	*out = t;
	return COW_OK;
}

static bool
o_canonical(const struct cow__fval *v)
{
	(void)v;
	return true;
}

/* Where step @s puts each of its elements in a row-major parent. */
static void
o_step_layout(const struct cow__view_step *s, struct cow__layout *l)
{
	cow__layout_contiguous(l, s->in_ndim, s->in_sizes);
	cow__view_step_layout(s, l);
}

/* Copy the @n elements of the view @l of @whole, in row-major order, to
 * the packed @packed (@gather) or from it (else); @is bytes each. */
static void
o_copy_view_elements(const struct cow__layout *l, int64_t n, size_t is,
    char *packed, char *whole, bool gather)
{
	int64_t idx[COW__FN_MAXD] = {0};

	for (int64_t k = 0; k < n; k++) {
		char *p = packed + k * (int64_t)is;
		char *w = whole + (l->offset + dot(l->ndim, idx, l->strides)) *
		    (int64_t)is;

		if (gather)
			memcpy(p, w, is);
		else
			memcpy(w, p, is);
		cow__shape_next_index(l->ndim, l->sizes, idx);
	}
}

static cow_status_t
o_view_copy(const struct cow__view_step *s, struct cow__fval *in,
    struct cow__fval **out, const char *func)
{
	struct cow__layout l;
	struct cow__fval *r;
	cow_status_t st;

	(void)func;
	o_step_layout(s, &l);
	if ((st = o_new(in->alloc, in->dtype, l.ndim, l.sizes, &r)) != COW_OK)
		return st;
	o_copy_view_elements(&l, r->numel, in->itemsize, r->data, in->data,
	    true);
	*out = r;
	return COW_OK;
}

static cow_status_t
o_scatter(const struct cow__view_step *s, struct cow__fval *parent,
    struct cow__fval *src, struct cow__fval **out, const char *func)
{
	struct cow__layout l;
	struct cow__fval *r;
	cow_status_t st;

	(void)func;
	o_step_layout(s, &l);
	if ((st = o_new(parent->alloc, parent->dtype, parent->ndim,
	    parent->sizes, &r)) != COW_OK)
		return st;
	if (r->nbytes > 0)
		memcpy(r->data, parent->data, r->nbytes);
	o_copy_view_elements(&l, src->numel, parent->itemsize, src->data,
	    r->data, false);
	*out = r;
	return COW_OK;
}

static cow_status_t
o_full(const cow_backend_t *be, cow_allocator_t *alloc,
    cow_dtype_t dtype, int ndim, const int64_t *sizes,
    const struct cow__fn_scalar *x, struct cow__fval **out, const char *func)
{
	struct cow__fval *r;
	cow__scalar_t v;
	cow_status_t st;

	(void)be;
	(void)func;
	if ((st = o_new(alloc, dtype, ndim, sizes, &r)) != COW_OK)
		return st;
	if (x->is_int)
		cow__store_i64(dtype, &v, x->i);
	else
		cow__store_f64(dtype, &v, x->f);
	for (int64_t k = 0; k < r->numel; k++)
		memcpy(r->data + k * (int64_t)r->itemsize, &v, r->itemsize);
	*out = r;
	return COW_OK;
}

/* Strides (elements) presenting the row-major value @v with the shape
 * (@ndim, @sizes): 0 where it is broadcast. Validated by the layer. */
static void
o_bstrides(const struct cow__fval *v, int ndim, const int64_t *sizes,
    int64_t *out)
{
	int64_t own[COW__FN_MAXD];

	cow__contiguous_strides(v->ndim, v->sizes, own);
	(void)cow__broadcast_strides(v->ndim, v->sizes, own, ndim, sizes, out);
}

/* @x rounded to the precision the ops of @dtype compute in (ops.h):
 * double for float64 and complex128, float for the other floating dtypes
 * (float16 and bfloat16 compute in float, then round to the dtype). */
static double
o_round(cow_dtype_t dtype, double x)
{
	if (dtype == COW_DTYPE_FLOAT64 || dtype == COW_DTYPE_COMPLEX128)
		return x;
	return cow__f64_to_f32(x);
}

/* Complex division in the component precision of @dtype (ops.h: Smith's
 * method, every step rounded as the loops round it). */
static void
o_cdiv(cow_dtype_t dtype, cow__value_t a, cow__value_t b, cow__value_t *r)
{
	double ar = fabs(b.re), ai = fabs(b.im), q, den, s;

	if (ar >= ai && ar == 0 && ai == 0) {
		r->re = o_round(dtype, a.re / ar);
		r->im = o_round(dtype, a.im / ar);
	} else if (ar >= ai) {
		q = o_round(dtype, b.im / b.re);
		den = o_round(dtype, b.re + o_round(dtype, b.im * q));
		s = o_round(dtype, 1.0 / den);
		r->re = o_round(dtype, o_round(dtype, a.re +
		    o_round(dtype, a.im * q)) * s);
		r->im = o_round(dtype, o_round(dtype, a.im -
		    o_round(dtype, a.re * q)) * s);
	} else {
		q = o_round(dtype, b.re / b.im);
		den = o_round(dtype, b.im + o_round(dtype, b.re * q));
		s = o_round(dtype, 1.0 / den);
		r->re = o_round(dtype, o_round(dtype, o_round(dtype,
		    a.re * q) + a.im) * s);
		r->im = o_round(dtype, o_round(dtype, o_round(dtype,
		    a.im * q) - a.re) * s);
	}
}

/* a < b (@or_equal: a <= b) on exact values of one dtype; complex values
 * in NumPy's lexicographic order (ops.h). */
static bool
o_less(cow__value_t a, cow__value_t b, bool or_equal)
{
	if (a.kind == COW__VALUE_INT)
		return or_equal ? (int64_t)a.u <= (int64_t)b.u :
		    (int64_t)a.u < (int64_t)b.u;
	if (a.kind == COW__VALUE_UINT)
		return or_equal ? a.u <= b.u : a.u < b.u;
	if ((a.re < b.re && !isnan(a.im) && !isnan(b.im)))
		return true;
	return a.re == b.re && (or_equal ? a.im <= b.im : a.im < b.im);
}

static bool
o_equal_value(cow__value_t a, cow__value_t b)
{
	if (a.kind != COW__VALUE_FLOAT)
		return a.u == b.u;
	return a.re == b.re && a.im == b.im;
}

/* One element of @op over @dtype (ops.h: integers wrap, bool add is or,
 * bool mul is and, floating ops round to the dtype; comparisons write
 * bool, div of bool and integers float64). Values come exact from
 * cow__load(); a sum, difference, product or quotient of two floats is
 * exact or rounds to the float result when computed in double and rounded
 * once to float. Floor division and modulo share divmod.h with the
 * loops. */
static void
o_apply(enum cow__binop op, cow_dtype_t dtype, void *dst, const void *x,
    const void *y)
{
	cow__value_t a = cow__load(dtype, x), b = cow__load(dtype, y), r = a;
	int c = -1;

	switch (op) {
	case COW__BINOP_EQ:
		c = o_equal_value(a, b);
		break;
	case COW__BINOP_NE:
		c = !o_equal_value(a, b);
		break;
	case COW__BINOP_LT:
		c = o_less(a, b, false);
		break;
	case COW__BINOP_LE:
		c = o_less(a, b, true);
		break;
	case COW__BINOP_GT:
		c = o_less(b, a, false);
		break;
	case COW__BINOP_GE:
		c = o_less(b, a, true);
		break;
	default:
		break;
	}
	if (c >= 0) {
		cow__store(COW_DTYPE_BOOL, dst, cow__value_i64(c));
		return;
	}
	if (op == COW__BINOP_DIV && a.kind != COW__VALUE_FLOAT) {
		/* Bool and integers: a float64 quotient of the operands
		 * converted by C's cast (one rounding beyond 2^53). */
		cow__store(COW_DTYPE_FLOAT64, dst, cow__value_f64(
		    cow__value_to_f64(a) / cow__value_to_f64(b)));
		return;
	}
	if (dtype == COW_DTYPE_BOOL) {
		r.u = op == COW__BINOP_ADD ? (a.u || b.u) : (a.u && b.u);
	} else if (a.kind != COW__VALUE_FLOAT) {
		bool sgn = a.kind == COW__VALUE_INT;

		if (op == COW__BINOP_ADD)
			r.u = a.u + b.u;
		else if (op == COW__BINOP_SUB)
			r.u = a.u - b.u;
		else if (op == COW__BINOP_MUL)
			r.u = a.u * b.u;
		else if (op == COW__BINOP_FLOOR_DIV)
			r.u = sgn ? (uint64_t)cow__floor_div_i64((int64_t)a.u,
			    (int64_t)b.u) : cow__floor_div_u64(a.u, b.u);
		else
			r.u = sgn ? (uint64_t)cow__mod_i64((int64_t)a.u,
			    (int64_t)b.u) : cow__mod_u64(a.u, b.u);
	} else if (op == COW__BINOP_ADD) {
		r.re = o_round(dtype, a.re + b.re);
		r.im = o_round(dtype, a.im + b.im);
	} else if (op == COW__BINOP_SUB) {
		r.re = o_round(dtype, a.re - b.re);
		r.im = o_round(dtype, a.im - b.im);
	} else if (op == COW__BINOP_DIV && cow__dtype_is_complex(dtype)) {
		o_cdiv(dtype, a, b, &r);
	} else if (op == COW__BINOP_DIV) {
		r.re = o_round(dtype, a.re / b.re);
	} else if (op == COW__BINOP_FLOOR_DIV || op == COW__BINOP_MOD) {
		bool fd = op == COW__BINOP_FLOOR_DIV;

		if (dtype == COW_DTYPE_FLOAT64)
			r.re = fd ? cow__floor_div_f64(a.re, b.re) :
			    cow__mod_f64(a.re, b.re);
		else
			r.re = fd ? cow__floor_div_f32((float)a.re,
			    (float)b.re) : cow__mod_f32((float)a.re,
			    (float)b.re);
	} else if (!cow__dtype_is_complex(dtype)) {
		r.re = o_round(dtype, a.re * b.re);
	} else {
		/* (ac - bd) + (ad + bc)i, every step rounded. */
		double ac = o_round(dtype, a.re * b.re);
		double bd = o_round(dtype, a.im * b.im);
		double ad = o_round(dtype, a.re * b.im);
		double bc = o_round(dtype, a.im * b.re);

		r.re = o_round(dtype, ac - bd);
		r.im = o_round(dtype, ad + bc);
	}
	cow__store(dtype, dst, r);
}

static cow_status_t
o_binary(enum cow__binop op, struct cow__fval *a, struct cow__fval *b,
    int ndim, const int64_t *sizes, struct cow__fval **out, const char *func)
{
	int64_t idx[COW__FN_MAXD] = {0}, as[COW__FN_MAXD], bs[COW__FN_MAXD];
	struct cow__fval *r;
	cow_status_t st;
	int64_t is, rs;

	(void)func;
	if ((st = o_new(a->alloc, cow__binop_result_dtype(op, a->dtype), ndim,
	    sizes, &r)) != COW_OK)
		return st;
	is = (int64_t)a->itemsize;
	rs = (int64_t)r->itemsize;
	o_bstrides(a, ndim, sizes, as);
	o_bstrides(b, ndim, sizes, bs);
	for (int64_t k = 0; k < r->numel; k++) {
		o_apply(op, a->dtype, r->data + k * rs,
		    a->data + dot(ndim, idx, as) * is,
		    b->data + dot(ndim, idx, bs) * is);
		cow__shape_next_index(ndim, sizes, idx);
	}
	*out = r;
	return COW_OK;
}

static cow_status_t
o_binary_scalar(enum cow__binop op, struct cow__fval *a, double x,
    struct cow__fval **out, const char *func)
{
	struct cow__fval *r;
	cow__scalar_t v;
	cow_status_t st;
	int64_t is;

	(void)func;
	if ((st = o_new(a->alloc, a->dtype, a->ndim, a->sizes, &r)) != COW_OK)
		return st;
	is = (int64_t)r->itemsize;
	cow__store_f64(a->dtype, &v, x);   /* the scalar in the dtype */
	for (int64_t k = 0; k < r->numel; k++)
		o_apply(op, a->dtype, r->data + k * is, a->data + k * is,
		    &v);
	*out = r;
	return COW_OK;
}

static cow_status_t
o_neg(struct cow__fval *a, struct cow__fval **out, const char *func)
{
	struct cow__fval *r;
	cow_status_t st;
	int64_t is;

	(void)func;
	if ((st = o_new(a->alloc, a->dtype, a->ndim, a->sizes, &r)) != COW_OK)
		return st;
	is = (int64_t)r->itemsize;
	for (int64_t k = 0; k < r->numel; k++) {
		cow__value_t x = cow__load(a->dtype, a->data + k * is);

		/* Negation is exact; integers wrap modulo 2^bits. */
		x.u = 0 - x.u;
		x.re = -x.re;
		x.im = -x.im;
		cow__store(a->dtype, r->data + k * is, x);
	}
	*out = r;
	return COW_OK;
}

static cow_status_t
o_convert(struct cow__fval *src, cow_dtype_t dtype, int ndim,
    const int64_t *sizes, struct cow__fval **out, const char *func)
{
	int64_t idx[COW__FN_MAXD] = {0}, ss[COW__FN_MAXD];
	struct cow__fval *r;
	cow_status_t st;

	(void)func;
	if ((st = o_new(src->alloc, dtype, ndim, sizes, &r)) !=
	    COW_OK)
		return st;
	o_bstrides(src, ndim, sizes, ss);
	for (int64_t k = 0; k < r->numel; k++) {
		char *d = r->data + k * (int64_t)r->itemsize;
		const char *x = src->data + dot(ndim, idx, ss) *
		    (int64_t)src->itemsize;

		/* Within one dtype the bytes are copied as they are (ops.h:
		 * copy_), so a bool byte other than 0 or 1, read from a
		 * caller's storage, stays what it was. */
		if (dtype == src->dtype)
			memcpy(d, x, r->itemsize);
		else
			cow__convert(dtype, d, src->dtype, x);
		cow__shape_next_index(ndim, sizes, idx);
	}
	*out = r;
	return COW_OK;
}

/*
 * The sum in ops.h's order, through the loop the strided kernels sum with
 * (loops.h: one implementation of the order rule, so that a program's sums
 * have the same bits on every backend). The value is row-major, so the
 * iterator sees one run where the tensor's layout may have several: @run
 * cuts it into the layout's runs.
 */
static cow_status_t
o_sum(struct cow__fval *a, uint32_t mask, int64_t run, int ndim,
    const int64_t *sizes, struct cow__fval **out, const char *func)
{
	int64_t rs[COW__FN_MAXD], own[COW__FN_MAXD], as[COW__FN_MAXD];
	cow_dtype_t dt = cow__sum_dtype(a->dtype);
	cow_dtype_t adt = cow__sum_acc_dtype(a->dtype);
	struct cow__sum_arg arg = {a->dtype, run};
	size_t asz = cow_dtype_size(adt), nacc;
	struct cow__fval *r;
	cow__iter_t it;
	cow_status_t st;
	char *acc;
	int k = 0;

	(void)func;
	if ((st = o_new(a->alloc, dt, ndim, sizes, &r)) != COW_OK)
		return st;
	/* float16 and bfloat16 accumulate in a float32 scratch, rounded
	 * once at the end; other dtypes in the result. */
	nacc = (size_t)r->numel * asz;
	acc = r->data;
	if (adt != dt && r->numel > 0 &&
	    (acc = cow__alloc(a->alloc, nacc)) == NULL) {
		cow__fval_release(r);
		return COW_ENOMEM;
	}
	if (r->numel > 0)
		memset(acc, 0, nacc);   /* +0 and 0 in every dtype */
	/* Output position of each input dimension: 0 when reduced. */
	cow__contiguous_strides(ndim, sizes, own);
	for (int d = 0; d < a->ndim; d++) {
		bool reduced = (mask >> d) & 1;
		bool kept = reduced && ndim == a->ndim;

		rs[d] = reduced ? 0 : own[k];
		if (!reduced || kept)
			k++;
	}
	cow__contiguous_strides(a->ndim, a->sizes, as);
	cow__iter_init(&it, a->ndim, a->sizes);
	cow__iter_add(&it, acc, rs, asz);
	cow__iter_add(&it, a->data, as, a->itemsize);
	(void)cow__iter_run(&it, cow__loop_sum, &arg);
	if (acc != r->data) {
		for (int64_t n = 0; n < r->numel; n++)
			cow__convert(dt, r->data + n * (int64_t)r->itemsize,
			    adt, acc + n * (int64_t)asz);
		cow__free(a->alloc, acc, nacc);
	}
	*out = r;
	return COW_OK;
}

static cow_status_t
o_equal(struct cow__fval *a, struct cow__fval *b, bool *out,
    const char *func)
{
	bool eq = a->ndim == b->ndim;
	int64_t is = (int64_t)a->itemsize;

	(void)func;
	for (int d = 0; eq && d < a->ndim; d++)
		eq = a->sizes[d] == b->sizes[d];
	for (int64_t k = 0; eq && k < a->numel; k++) {
		cow__value_t x = cow__load(a->dtype, a->data + k * is);
		cow__value_t y = cow__load(b->dtype, b->data + k * is);

		/* Bools load as 0 or 1; NaN is unequal, -0 == 0. */
		if (x.kind == COW__VALUE_FLOAT)
			eq = x.re == y.re && x.im == y.im;
		else
			eq = x.u == y.u;
	}
	*out = eq;
	return COW_OK;
}
static const char *
o_element(struct cow__fval *v, const int64_t *index)
{
	int64_t own[COW__FN_MAXD];

	cow__contiguous_strides(v->ndim, v->sizes, own);
	return v->data + dot(v->ndim, index, own) * (int64_t)v->itemsize;
}

static const void *
o_dense_data(struct cow__fval *v, bool *need_copy)
{
	*need_copy = false;
	return v->numel > 0 ? v->data : NULL;
}

static void
o_destroy(struct cow__fval *v)
{
	if (v->data != NULL)
		cow__free(v->alloc, v->data, v->nbytes);
}

static const struct cow__backend_ops opaque_ops = {
	.import = o_import,
	.export_plain = o_export,
	.canonical = o_canonical,
	.view_copy = o_view_copy,
	.scatter = o_scatter,
	.full = o_full,
	.binary = o_binary,
	.binary_scalar = o_binary_scalar,
	.neg = o_neg,
	.convert = o_convert,
	.sum = o_sum,
	.equal = o_equal,
	.element = o_element,
	.dense_data = o_dense_data,
	.destroy = o_destroy,
};

const struct cow_backend_s cow__backend_opaque = {
	"opaque_test", true, &opaque_ops
};
