/*
 * ops.c - arithmetic (+, -, *, /, //, %, unary -, in-place forms),
 * comparisons, sum, fill_, copy_, equal. Every op over data runs with the GIL released.
 */
#include "core/fault.h"
#include "pycow.h"

#define T(o) (((pycow_tensor *)(o))->t)

typedef cow_status_t (*binary_fn)(const cow_tensor_t *, const cow_tensor_t *,
    cow_tensor_t **);
typedef cow_status_t (*inplace_fn)(cow_tensor_t *, const cow_tensor_t *);

/*
 * The binary operators. Operands of different dtypes meet in their
 * promoted dtype (promote(), docs/tensor.md's table: NumPy 1.24's
 * promote_types, and bfloat16 as float16 but bfloat16 with float16 is
 * float32); a Python scalar is weak (NEP 50, scalar_dtype()). The op then
 * runs in that dtype, with these NumPy adjustments: floor division and
 * modulo of bools run in int8, and sub refuses bool, floor division and
 * modulo complex. The result has the op's dtype, but for the comparisons
 * (bool) and true division of bool or integers, which cow_tensor_div
 * computes into float64 in one pass, as NumPy's true_divide does
 * (op_result()).
 */
enum pyop { OP_ADD, OP_MUL, OP_SUB, OP_DIV, OP_FLOOR_DIV, OP_MOD, OP_EQ,
	OP_NE, OP_LT, OP_LE, OP_GT, OP_GE };

static const struct {
	binary_fn out;
	inplace_fn in;      /* NULL: no in-place form */
	const char *name;   /* NumPy's ufunc, for messages */
} pyops[] = {
	[OP_ADD] = { cow_tensor_add, cow_tensor_add_, "add" },
	[OP_MUL] = { cow_tensor_mul, cow_tensor_mul_, "multiply" },
	[OP_SUB] = { cow_tensor_sub, cow_tensor_sub_, "subtract" },
	[OP_DIV] = { cow_tensor_div, cow_tensor_div_, "true_divide" },
	[OP_FLOOR_DIV] = { cow_tensor_floor_div, cow_tensor_floor_div_,
	    "floor_divide" },
	[OP_MOD] = { cow_tensor_mod, cow_tensor_mod_, "remainder" },
	[OP_EQ] = { cow_tensor_eq, NULL, "equal" },
	[OP_NE] = { cow_tensor_ne, NULL, "not_equal" },
	[OP_LT] = { cow_tensor_lt, NULL, "less" },
	[OP_LE] = { cow_tensor_le, NULL, "less_equal" },
	[OP_GT] = { cow_tensor_gt, NULL, "greater" },
	[OP_GE] = { cow_tensor_ge, NULL, "greater_equal" },
};

/* NumPy's kinds in can_cast's same_kind order: bool, unsigned, signed,
 * floating, complex. */
enum { K_BOOL, K_UINT, K_INT, K_FLOAT, K_COMPLEX };

static int
kind_of(cow_dtype_t d)
{
	switch (d) {
	case COW_DTYPE_BOOL:
		return K_BOOL;
	case COW_DTYPE_UINT8: case COW_DTYPE_UINT16: case COW_DTYPE_UINT32:
	case COW_DTYPE_UINT64:
		return K_UINT;
	case COW_DTYPE_INT8: case COW_DTYPE_INT16: case COW_DTYPE_INT32:
	case COW_DTYPE_INT64:
		return K_INT;
	case COW_DTYPE_COMPLEX64: case COW_DTYPE_COMPLEX128:
		return K_COMPLEX;
	default:
		return K_FLOAT;
	}
}

/* Bits of an integer; for the floating result: the float width an
 * operand needs (8-bit integers 16, 16-bit 32, wider 64; a complex
 * dtype's component width). */
static int
float_bits(cow_dtype_t d)
{
	if (kind_of(d) == K_COMPLEX)
		return (int)cow_dtype_size(d) * 4;
	if (kind_of(d) == K_FLOAT)
		return (int)cow_dtype_size(d) * 8;
	return cow_dtype_size(d) == 1 ? 16 : cow_dtype_size(d) == 2 ? 32 : 64;
}

static cow_dtype_t
int_of(int kind, size_t bytes)
{
	static const cow_dtype_t s[] = { COW_DTYPE_INT8, COW_DTYPE_INT16,
	    COW_DTYPE_INT32, COW_DTYPE_INT64 };
	static const cow_dtype_t u[] = { COW_DTYPE_UINT8, COW_DTYPE_UINT16,
	    COW_DTYPE_UINT32, COW_DTYPE_UINT64 };
	int i = bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3;

	return kind == K_INT ? s[i] : u[i];
}

static cow_dtype_t
promote(cow_dtype_t a, cow_dtype_t b)
{
	int ka = kind_of(a), kb = kind_of(b), bits;

	if (a == b || kb == K_BOOL)
		return a;
	if (ka == K_BOOL)
		return b;
	if (ka <= K_INT && kb <= K_INT) {
		size_t sa = cow_dtype_size(a), sb = cow_dtype_size(b);
		cow_dtype_t us = ka == K_UINT ? a : b, ss = ka == K_UINT ? b : a;

		if (ka == kb)
			return sa >= sb ? a : b;
		if (cow_dtype_size(ss) > cow_dtype_size(us))
			return ss;
		if (cow_dtype_size(us) < 8)
			return int_of(K_INT, 2 * cow_dtype_size(us));
		return COW_DTYPE_FLOAT64;
	}
	bits = float_bits(a) > float_bits(b) ? float_bits(a) : float_bits(b);
	if (ka == K_COMPLEX || kb == K_COMPLEX)
		return bits <= 32 ? COW_DTYPE_COMPLEX64 : COW_DTYPE_COMPLEX128;
	if (bits == 16) {
		bool h = a == COW_DTYPE_FLOAT16 || b == COW_DTYPE_FLOAT16;
		bool bf = a == COW_DTYPE_BFLOAT16 || b == COW_DTYPE_BFLOAT16;

		return h && bf ? COW_DTYPE_FLOAT32 :
		    h ? COW_DTYPE_FLOAT16 : COW_DTYPE_BFLOAT16;
	}
	return bits == 32 ? COW_DTYPE_FLOAT32 : COW_DTYPE_FLOAT64;
}

/* The dtype a Python scalar takes against a tensor of @t (NEP 50's weak
 * scalars): bool: @t's; int: int64 against bool, else @t's (an integer
 * dtype must hold the value: OverflowError otherwise); float: float64
 * against bool and integers, else @t's; complex: complex128 against bool,
 * integers and float64, complex64 against the narrower floats, else @t's.
 * -1 with an exception set. */
static int
scalar_dtype(PyObject *obj, cow_dtype_t t, cow_dtype_t *out)
{
	int k = kind_of(t);

	*out = t;
	if (PyBool_Check(obj))
		return 0;
	if (PyLong_Check(obj)) {
		if (k == K_BOOL) {
			*out = COW_DTYPE_INT64;
		} else if (k == K_INT || k == K_UINT) {
			int bits = (int)cow_dtype_size(t) * 8, ovf;
			long long v = PyLong_AsLongLongAndOverflow(obj, &ovf);
			bool fits;

			if (v == -1 && PyErr_Occurred())
				return -1;
			if (k == K_UINT && ovf > 0 && bits == 64) {
				(void)PyLong_AsUnsignedLongLong(obj);
				fits = !PyErr_Occurred();
				PyErr_Clear();
			} else if (ovf != 0) {
				fits = false;
			} else if (k == K_UINT) {
				fits = v >= 0 && (bits == 64 ||
				    (unsigned long long)v < (1ull << bits));
			} else {
				fits = bits == 64 || (v >= -(1ll << (bits - 1)) &&
				    v < (1ll << (bits - 1)));
			}
			if (!fits) {
				PyErr_Format(PyExc_OverflowError, "Python integer "
				    "%R out of bounds for %s", obj,
				    cow_dtype_name(t));
				return -1;
			}
		}
		return 0;
	}
	if (PyFloat_Check(obj)) {
		if (k <= K_INT)
			*out = COW_DTYPE_FLOAT64;
		return 0;
	}
	if (k <= K_INT || t == COW_DTYPE_FLOAT64)
		*out = COW_DTYPE_COMPLEX128;
	else if (k == K_FLOAT)
		*out = COW_DTYPE_COMPLEX64;
	return 0;
}

/* The dtype @op runs in for operands of @a and @b (-1: TypeError set). */
static int
op_dtype(enum pyop op, cow_dtype_t a, cow_dtype_t b, cow_dtype_t *out)
{
	cow_dtype_t r = promote(a, b);
	int k = kind_of(r);

	if (op == OP_SUB && k == K_BOOL) {
		PyErr_SetString(PyExc_TypeError, "cowstore: boolean subtract, "
		    "the `-` operator, is not supported (as in NumPy)");
		return -1;
	}
	if ((op == OP_FLOOR_DIV || op == OP_MOD) && k == K_COMPLEX) {
		PyErr_Format(PyExc_TypeError, "cowstore: %s is not defined "
		    "for complex dtypes (as in NumPy)", pyops[op].name);
		return -1;
	}
	if ((op == OP_FLOOR_DIV || op == OP_MOD) && k == K_BOOL)
		r = COW_DTYPE_INT8;
	*out = r;
	return 0;
}

/* The dtype @op gives for operands of @dt (op_dtype's): bool for the
 * comparisons, float64 for true division of bool and integers (ops.h),
 * else @dt. */
static cow_dtype_t
op_result(enum pyop op, cow_dtype_t dt)
{
	if (op >= OP_EQ)
		return COW_DTYPE_BOOL;
	if (op == OP_DIV && kind_of(dt) <= K_INT)
		return COW_DTYPE_FLOAT64;
	return dt;
}

/* @t converted to @dtype: a new reference (*made set) or @t itself when it
 * has that dtype (*made NULL). -1 with an exception set. */
static int
as_dtype(cow_tensor_t *t, cow_dtype_t dtype, cow_tensor_t **use,
    cow_tensor_t **made)
{
	cow_tensor_t *r = NULL;
	cow_status_t st;

	*made = NULL;
	*use = t;
	if (cow_tensor_dtype(t) == dtype)
		return 0;
	if (pycow_check(cow_tensor_empty(dtype, cow_tensor_ndim(t),
	    cow_tensor_sizes(t), NULL, &r)) < 0)
		return -1;
	PYCOW_LOCKED1(t, false, st = cow_tensor_copy_(r, t));
	if (pycow_check(st) < 0) {
		cow_tensor_release(r);
		return -1;
	}
	*use = *made = r;
	return 0;
}

/* One operand: a Tensor or a Python scalar (weak: its dtype comes from
 * the tensor @like). 0: neither (NotImplemented). */
struct operand {
	PyObject *obj;
	cow_dtype_t dtype;
	cow_tensor_t *t;      /* the operand in the op's dtype */
	cow_tensor_t *made;   /* a conversion or scalar we release */
};

static int
operand_dtype(struct operand *o, PyObject *obj, const cow_tensor_t *like)
{
	o->obj = obj;
	o->t = o->made = NULL;
	if (pycow_tensor_check(obj)) {
		o->dtype = cow_tensor_dtype(T(obj));
		return 1;
	}
	if (!pycow_is_scalar(obj))
		return 0;
	return scalar_dtype(obj, cow_tensor_dtype(like), &o->dtype) < 0 ?
	    -1 : 1;
}

static int
operand_as(struct operand *o, cow_dtype_t dtype)
{
	if (pycow_tensor_check(o->obj))
		return as_dtype(T(o->obj), dtype, &o->t, &o->made);
	if (pycow_scalar_like(o->obj, dtype, &o->made) < 0)
		return -1;
	o->t = o->made;
	return 0;
}

/*
 * *@out = @fn(x, y) for two operands (operand_dtype() done) converted to
 * @dt first, with the GIL released and both guarded as reads; the
 * conversions are released either way. 0, or -1 with an exception set
 * (*@out untouched).
 */
static int
apply_converted(struct operand *x, struct operand *y, cow_dtype_t dt,
    binary_fn fn, cow_tensor_t **out)
{
	struct pycow_guard g = { 0 };
	cow_tensor_t *r = NULL;
	cow_status_t st;

	if (operand_as(x, dt) < 0)
		return -1;
	if (operand_as(y, dt) < 0) {
		cow_tensor_release(x->made);
		return -1;
	}
	pycow_guard_add(&g, x->t, false);
	pycow_guard_add(&g, y->t, false);
	PYCOW_LOCKED(&g, st = fn(x->t, y->t, &r));
	cow_tensor_release(x->made);
	cow_tensor_release(y->made);
	if (pycow_check(st) < 0)
		return -1;
	*out = r;
	return 0;
}

static PyObject *
binary(PyObject *a, PyObject *b, enum pyop op)
{
	PyObject *self = pycow_tensor_check(a) ? a : b;
	struct operand x, y;
	cow_tensor_t *out;
	cow_dtype_t dt;
	int rc;

	if ((rc = operand_dtype(&x, a, T(self))) <= 0 ||
	    (rc = operand_dtype(&y, b, T(self))) <= 0)
		return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
	if (op_dtype(op, x.dtype, y.dtype, &dt) < 0 ||
	    apply_converted(&x, &y, dt, pyops[op].out, &out) < 0)
		return NULL;
	return pycow_wrap(out);
}

/*
 * self op= other: the op's dtype as out of place; the result's dtype
 * (op_result()) must cast to self's by NumPy's same_kind rule (bool <
 * unsigned < signed < floating < complex, never down a kind), else
 * TypeError as NumPy's (so `/=` of an integer or bool tensor is one). When
 * the op's dtype is self's, the in-place op runs on self; otherwise the op
 * runs out of place in that dtype and the result is converted into self.
 */
static PyObject *
inplace(PyObject *self, PyObject *other, enum pyop op)
{
	cow_dtype_t sd, dt, rd;
	struct operand y;
	cow_status_t st;
	int rc;

	if (!pycow_tensor_check(self))
		return Py_NewRef(Py_NotImplemented);
	sd = cow_tensor_dtype(T(self));
	if ((rc = operand_dtype(&y, other, T(self))) <= 0)
		return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
	if (op_dtype(op, sd, y.dtype, &dt) < 0)
		return NULL;
	rd = op_result(op, dt);
	if (kind_of(rd) > kind_of(sd)) {
		PyErr_Format(PyExc_TypeError, "Cannot cast ufunc '%s' output "
		    "from dtype('%s') to dtype('%s') with casting rule "
		    "'same_kind'", pyops[op].name, cow_dtype_name(rd),
		    cow_dtype_name(sd));
		return NULL;
	}
	if (dt != sd) {
		struct operand x;
		cow_tensor_t *r;

		(void)operand_dtype(&x, self, T(self));
		if (apply_converted(&x, &y, dt, pyops[op].out, &r) < 0)
			return NULL;
		PYCOW_LOCKED1(T(self), true, st = cow_tensor_copy_(T(self), r));
		cow_tensor_release(r);
	} else {
		/* rd is sd: only div changes the dtype, and of integers,
		 * which kind_of refused above. */
		struct pycow_guard g = { 0 };

		if (operand_as(&y, dt) < 0)
			return NULL;
		pycow_guard_add(&g, T(self), true);
		pycow_guard_add(&g, y.t, false);
		PYCOW_LOCKED(&g, st = pyops[op].in(T(self), y.t));
		cow_tensor_release(y.made);
	}
	if (pycow_check(st) < 0)
		return NULL;
	return Py_NewRef(self);
}

#define NB_BINARY(name, OP)                                                 \
static PyObject *                                                           \
nb_##name(PyObject *a, PyObject *b)                                         \
{                                                                           \
	return binary(a, b, OP);                                            \
}                                                                           \
static PyObject *                                                           \
nb_i##name(PyObject *a, PyObject *b)                                        \
{                                                                           \
	return inplace(a, b, OP);                                           \
}
NB_BINARY(add, OP_ADD)
NB_BINARY(mul, OP_MUL)
NB_BINARY(sub, OP_SUB)
NB_BINARY(div, OP_DIV)
NB_BINARY(floor_div, OP_FLOOR_DIV)
NB_BINARY(mod, OP_MOD)
#undef NB_BINARY

/* ==, !=, <, <=, >, >=: element-wise, into bool tensors (NumPy's). Python
 * calls this with self a Tensor. */
PyObject *
pycow_richcompare(PyObject *self, PyObject *other, int cmp)
{
	static const enum pyop ops[] = { [Py_LT] = OP_LT, [Py_LE] = OP_LE,
	    [Py_EQ] = OP_EQ, [Py_NE] = OP_NE, [Py_GT] = OP_GT,
	    [Py_GE] = OP_GE };

	return binary(self, other, ops[cmp]);
}

/* a @ b of two tensors, promoted as the other operators (1-D and 2-D,
 * every dtype: cow_tensor_matmul). */
static PyObject *
nb_matmul(PyObject *a, PyObject *b)
{
	struct operand x, y;
	cow_tensor_t *out;

	if (!pycow_tensor_check(a) || !pycow_tensor_check(b))
		return Py_NewRef(Py_NotImplemented);
	(void)operand_dtype(&x, a, T(a));
	(void)operand_dtype(&y, b, T(b));
	if (apply_converted(&x, &y, promote(x.dtype, y.dtype),
	    cow_tensor_matmul, &out) < 0)
		return NULL;
	return pycow_wrap(out);
}

/*
 * t ** e for a Python int or float exponent @e, where it is cheap and
 * gives NumPy's values exactly: integer (and bool: int64) tensors and a
 * non-negative int, by repeated squaring (wrapping, as NumPy's integer
 * power); floating and complex tensors and e in {0, 1, 2} (NumPy's fast
 * paths: ones, a copy, x * x), and for real floats e = -1 (1 / x).
 * Anything else is a TypeError: NumPy calls pow() there, which cowstore
 * does not have. *@out: a new tensor.
 */
static int
power(cow_tensor_t *t, PyObject *e, cow_tensor_t **out)
{
	cow_dtype_t dt = cow_tensor_dtype(t);
	int k = kind_of(dt);
	cow_tensor_t *base = NULL, *acc = NULL, *use, *made;
	cow_status_t st = COW_OK;
	long long n;
	double f;

	if (PyFloat_Check(e)) {
		f = PyFloat_AS_DOUBLE(e);
		if (k <= K_INT || (f != 0 && f != 1 && f != 2 && f != -1))
			goto unsupported;
		n = (long long)f;
	} else if (PyLong_Check(e)) {
		int ovf;
		n = PyLong_AsLongLongAndOverflow(e, &ovf);
		if (n == -1 && PyErr_Occurred())
			return -1;
		if (ovf != 0)
			goto unsupported;
	} else {
		return 0;
	}
	if (k <= K_INT && n < 0) {
		PyErr_SetString(PyExc_ValueError, "Integers to negative integer "
		    "powers are not allowed.");
		return -1;
	}
	if (k >= K_FLOAT && (n < -1 || n > 2 || (n == -1 && k == K_COMPLEX)))
		goto unsupported;
	if (k == K_BOOL)
		dt = COW_DTYPE_INT64;
	if (as_dtype(t, dt, &use, &made) < 0)
		return -1;
	/* Square and multiply over n's bits; the first factor is taken as
	 * it is (a multiplication by ones would change a complex zero's
	 * sign: x ** 1 and x ** 2 are x and x * x exactly). */
	if (n <= 0) {
		if (pycow_check(cow_tensor_full(dt, cow_tensor_ndim(use),
		    cow_tensor_sizes(use), 1.0, NULL, &acc)) < 0) {
			cow_tensor_release(made);
			return -1;
		}
		if (n == -1)
			PYCOW_LOCKED1(use, false, st = cow_tensor_div_(acc, use));
	} else {
		PYCOW_LOCKED1(use, false, st = cow_tensor_clone(use, &base));
		while (st == COW_OK) {
			if (n & 1) {
				cow_tensor_t *r = NULL;

				st = acc == NULL ? cow_tensor_clone(base, &r) :
				    cow_tensor_mul(base, acc, &r);
				cow_tensor_release(acc);
				acc = r;
			}
			n >>= 1;
			if (n == 0 || st != COW_OK)
				break;
			st = cow_tensor_mul_(base, base);
		}
	}
	cow_tensor_release(base);
	cow_tensor_release(made);
	if (pycow_check(st) < 0) {
		cow_tensor_release(acc);
		return -1;
	}
	*out = acc;
	return 1;
unsupported:
	PyErr_Format(PyExc_TypeError, "cowstore: %s ** %R is not supported "
	    "(integer dtypes take ints >= 0; floating ones 0, 1, 2 and, real, "
	    "-1: NumPy computes the others with pow(), which cowstore does "
	    "not have)", cow_dtype_name(dt), e);
	return -1;
}

static PyObject *
nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
	cow_tensor_t *out = NULL;
	int rc;

	if (mod != Py_None || !pycow_tensor_check(a))
		return Py_NewRef(Py_NotImplemented);
	if ((rc = power(T(a), b, &out)) <= 0)
		return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
	return pycow_wrap(out);
}

/* t **= e: t ** e converted into t (same_kind: a bool tensor's int64
 * result is refused). */
static PyObject *
nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
	cow_tensor_t *out = NULL;
	cow_status_t st;
	int rc;

	if (mod != Py_None || !pycow_tensor_check(a))
		return Py_NewRef(Py_NotImplemented);
	if ((rc = power(T(a), b, &out)) <= 0)
		return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
	if (kind_of(cow_tensor_dtype(out)) > kind_of(cow_tensor_dtype(T(a)))) {
		PyErr_Format(PyExc_TypeError, "Cannot cast ufunc 'power' output "
		    "from dtype('%s') to dtype('%s') with casting rule "
		    "'same_kind'", cow_dtype_name(cow_tensor_dtype(out)),
		    cow_dtype_name(cow_tensor_dtype(T(a))));
		cow_tensor_release(out);
		return NULL;
	}
	PYCOW_LOCKED1(T(a), true, st = cow_tensor_copy_(T(a), out));
	cow_tensor_release(out);
	if (pycow_check(st) < 0)
		return NULL;
	return Py_NewRef(a);
}

static PyObject *
nb_neg(PyObject *a)
{
	cow_tensor_t *out = NULL;
	cow_status_t st;
	PYCOW_LOCKED1(T(a), false, st = cow_tensor_neg(T(a), &out));
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(out);
}

/* float(t), int(t), bool(t): of a one-element tensor. */
static PyObject *
scalar_of(PyObject *self)
{
	return pycow_item(self);
}

/* The item itself when exactly of @type, else @convert(item). */
static PyObject *
scalar_as(PyObject *self, PyTypeObject *type,
    PyObject *(*convert)(PyObject *))
{
	PyObject *v = scalar_of(self);
	if (v == NULL || Py_IS_TYPE(v, type))
		return v;
	PyObject *c = convert(v);
	Py_DECREF(v);
	return c;
}

static PyObject *
nb_float(PyObject *self)
{
	return scalar_as(self, &PyFloat_Type, PyNumber_Float);
}

static PyObject *
nb_int(PyObject *self)
{
	return scalar_as(self, &PyLong_Type, PyNumber_Long);
}

static int
nb_bool(PyObject *self)
{
	PyObject *v = scalar_of(self);
	if (v == NULL)
		return -1;
	int r = PyObject_IsTrue(v);
	Py_DECREF(v);
	return r;
}

PyNumberMethods pycow_number_methods = {
	.nb_add = nb_add,
	.nb_subtract = nb_sub,
	.nb_multiply = nb_mul,
	.nb_remainder = nb_mod,
	.nb_negative = nb_neg,
	.nb_inplace_add = nb_iadd,
	.nb_inplace_subtract = nb_isub,
	.nb_inplace_multiply = nb_imul,
	.nb_inplace_remainder = nb_imod,
	.nb_floor_divide = nb_floor_div,
	.nb_true_divide = nb_div,
	.nb_inplace_floor_divide = nb_ifloor_div,
	.nb_inplace_true_divide = nb_idiv,
	.nb_matrix_multiply = nb_matmul,
	.nb_power = nb_pow,
	.nb_inplace_power = nb_ipow,
	.nb_float = nb_float,
	.nb_int = nb_int,
	.nb_bool = nb_bool,
};

/* --- methods ------------------------------------------------------- */

static PyObject *
m_sum(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "dim", "keepdim", NULL };
	PyObject *dim = Py_None;
	int keepdim = 0;
	cow_tensor_t *out = NULL;
	cow_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op:sum", kwlist, &dim,
	    &keepdim))
		return NULL;
	if (dim == Py_None) {
		PYCOW_LOCKED1(T(self), false, st = cow_tensor_sum(T(self), &out));
	} else {
		int d;
		if (pycow_dim_arg(dim, &d, "sum", "dim") < 0)
			return NULL;
		PYCOW_LOCKED1(T(self), false,
		    st = cow_tensor_sum_dim(T(self), d, keepdim, &out));
	}
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(out);
}

static PyObject *
m_fill_(PyObject *self, PyObject *value)
{
	if (pycow_fill(T(self), value) < 0)
		return NULL;
	return Py_NewRef(self);
}

static PyObject *
m_copy_(PyObject *self, PyObject *src)
{
	PyObject *s = pycow_asarray(src, "copy_: src");
	cow_status_t st;
	if (s == NULL)
		return NULL;
	struct pycow_guard g = { 0 };
	pycow_guard_add(&g, T(self), true);
	pycow_guard_add(&g, T(s), false);
	PYCOW_LOCKED(&g, st = cow_tensor_copy_(T(self), T(s)));
	Py_DECREF(s);
	if (pycow_check(st) < 0)
		return NULL;
	return Py_NewRef(self);
}

static PyObject *
m_equal(PyObject *self, PyObject *other)
{
	bool eq = false;
	cow_status_t st;
	if (!pycow_tensor_check(other)) {
		PyErr_Format(PyExc_TypeError, "equal: expected a Tensor, got "
		    "%.100s", Py_TYPE(other)->tp_name);
		return NULL;
	}
	struct pycow_guard g = { 0 };
	pycow_guard_add(&g, T(self), false);
	pycow_guard_add(&g, T(other), false);
	PYCOW_LOCKED(&g, st = cow_tensor_equal(T(self), T(other), &eq));
	if (pycow_check(st) < 0)
		return NULL;
	return PyBool_FromLong(eq);
}

PyMethodDef pycow_op_methods[] = {
	{ "sum", (PyCFunction)(void (*)(void))m_sum, METH_VARARGS | METH_KEYWORDS,
	  "sum($self, /, dim=None, keepdim=False)\n--\n\n"
	  "a tensor (0-d without dim)" },
	{ "fill_", m_fill_, METH_O,
	  "fill_($self, value, /)\n--\n\n"
	  "every element, in place" },
	{ "copy_", m_copy_, METH_O,
	  "copy_($self, src, /)\n--\n\n"
	  "src broadcast and converted into self, in place" },
	{ "equal", m_equal, METH_O,
	  "equal($self, other, /)\n--\n\n"
	  "same shape and values" },
	/* A test variant's extra methods (python.many_methods). */
	COW__FAULT_POINT(op_methods_extra, )
	{ NULL, NULL, 0, NULL }
};

/* --- asarray ------------------------------------------------------- */

/* The pending exception again, its message prefixed "@what: " (the
 * function and argument the user called: asarray's inner steps name
 * from_dlpack, from_buffer or cowstore.tensor). */
static void
name_caller(const char *what)
{
	PyObject *type, *value, *tb;

	if (!PyErr_ExceptionMatches(PyExc_Exception))
		return;   /* KeyboardInterrupt and the like: as they are */
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	PyErr_Format(type, "%s: %S", what, value);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
}

PyObject *
pycow_asarray(PyObject *obj, const char *what)
{
	if (pycow_tensor_check(obj))
		return Py_NewRef(obj);
	PyObject *args = PyTuple_Pack(1, obj);
	PyObject *r = NULL;
	if (args == NULL)
		return NULL;
	if (PyObject_HasAttrString(obj, "__dlpack__") || PyCapsule_CheckExact(obj)) {
		r = pycow_from_dlpack(NULL, args, NULL);
		/* NumPy 1.24 will not export a read-only array: its buffer. */
		if (r == NULL && PyErr_ExceptionMatches(PyExc_BufferError) &&
		    PyObject_CheckBuffer(obj)) {
			PyErr_Clear();
			r = pycow_from_buffer(NULL, args, NULL);
		}
	} else if (PyObject_CheckBuffer(obj))
		r = pycow_from_buffer(NULL, args, NULL);
	else
		r = pycow_tensor_from_sequence(obj, Py_None);
	Py_DECREF(args);
	if (r == NULL)
		name_caller(what);
	return r;
}
