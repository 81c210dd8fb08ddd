/*
 * ops.c - arithmetic (+, *, unary -, in-place forms), sum, fill_, copy_,
 * equal. Every op over data runs with the GIL released.
 */
#include "core/fault.h"
#include "pycow.h"

#define T(o) (((pycow_tensor *)(o))->t)

typedef cow_status_t (*binary_fn)(const cow_tensor_t *, const cow_tensor_t *,
    cow_tensor_t **);
typedef cow_status_t (*inplace_fn)(cow_tensor_t *, const cow_tensor_t *);

/* The operand @obj as a tensor for an op with @like: a Tensor (borrowed,
 * *owned NULL) or a Python scalar converted to @like's dtype (*owned set);
 * 0 when @obj is neither (NotImplemented). */
static int
operand(PyObject *obj, const cow_tensor_t *like, cow_tensor_t **t,
    cow_tensor_t **owned)
{
	*owned = NULL;
	if (pycow_tensor_check(obj)) {
		*t = T(obj);
		return 1;
	}
	if (!pycow_is_scalar(obj))
		return 0;
	if (pycow_scalar_like(obj, cow_tensor_dtype(like), owned) < 0)
		return -1;
	*t = *owned;
	return 1;
}

static PyObject *
binary(PyObject *a, PyObject *b, binary_fn fn)
{
	PyObject *self = pycow_tensor_check(a) ? a : b;
	PyObject *other = self == a ? b : a;
	cow_tensor_t *o, *owned, *out = NULL;
	cow_status_t st;

	int rc = operand(other, T(self), &o, &owned);
	if (rc <= 0)
		return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
	/* Scalars commute: a + b and a * b are symmetric. */
	const cow_tensor_t *x = self == a ? T(self) : o;
	const cow_tensor_t *y = self == a ? o : T(self);
	struct pycow_guard g = { 0 };
	pycow_guard_add(&g, x, false);
	pycow_guard_add(&g, y, false);
	PYCOW_LOCKED(&g, st = fn(x, y, &out));
	cow_tensor_release(owned);
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(out);
}

static PyObject *
inplace(PyObject *self, PyObject *other, inplace_fn fn)
{
	cow_tensor_t *o, *owned;
	cow_status_t st;

	if (!pycow_tensor_check(self))
		return Py_NewRef(Py_NotImplemented);
	int rc = operand(other, T(self), &o, &owned);
	if (rc <= 0)
		return rc < 0 ? NULL : Py_NewRef(Py_NotImplemented);
	struct pycow_guard g = { 0 };
	pycow_guard_add(&g, T(self), true);
	pycow_guard_add(&g, o, false);
	PYCOW_LOCKED(&g, st = fn(T(self), o));
	cow_tensor_release(owned);
	if (pycow_check(st) < 0)
		return NULL;
	return Py_NewRef(self);
}

static PyObject *
nb_add(PyObject *a, PyObject *b)
{
	return binary(a, b, cow_tensor_add);
}

static PyObject *
nb_mul(PyObject *a, PyObject *b)
{
	return binary(a, b, cow_tensor_mul);
}

static PyObject *
nb_iadd(PyObject *a, PyObject *b)
{
	return inplace(a, b, cow_tensor_add_);
}

static PyObject *
nb_imul(PyObject *a, PyObject *b)
{
	return inplace(a, b, cow_tensor_mul_);
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

static PyObject *
nb_float(PyObject *self)
{
	PyObject *v = scalar_of(self);
	if (v == NULL || PyFloat_CheckExact(v))
		return v;
	PyObject *f = PyNumber_Float(v);
	Py_DECREF(v);
	return f;
}

static PyObject *
nb_int(PyObject *self)
{
	PyObject *v = scalar_of(self);
	if (v == NULL || PyLong_CheckExact(v))
		return v;
	PyObject *i = PyNumber_Long(v);
	Py_DECREF(v);
	return i;
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
	.nb_multiply = nb_mul,
	.nb_negative = nb_neg,
	.nb_inplace_add = nb_iadd,
	.nb_inplace_multiply = nb_imul,
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
