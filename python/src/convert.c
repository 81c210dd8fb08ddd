/*
 * convert.c - between Python values and the library's: dtypes (names,
 * NumPy and PyTorch dtypes, buffer formats), shapes, scalars, and tensors
 * built from nested sequences.
 */
#include <string.h>

#include "core/error.h"
#include "pycow.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

static const char *const formats[COW_DTYPE_COUNT] = {
	[COW_DTYPE_BOOL] = "?",
	[COW_DTYPE_UINT8] = "B",
	[COW_DTYPE_INT32] = "i",
	[COW_DTYPE_INT64] = "q",
	[COW_DTYPE_FLOAT32] = "f",
	[COW_DTYPE_FLOAT64] = "d",
	[COW_DTYPE_INT8] = "b",
	[COW_DTYPE_INT16] = "h",
	[COW_DTYPE_UINT16] = "H",
	[COW_DTYPE_UINT32] = "I",
	[COW_DTYPE_UINT64] = "Q",
	[COW_DTYPE_FLOAT16] = "e",
	[COW_DTYPE_BFLOAT16] = NULL,
	[COW_DTYPE_COMPLEX64] = "Zf",
	[COW_DTYPE_COMPLEX128] = "Zd",
};

const char *
pycow_dtype_format(cow_dtype_t dtype)
{
	return (unsigned)dtype < COW_DTYPE_COUNT ? formats[dtype] : NULL;
}

PyObject *
pycow_dtype_name(cow_dtype_t dtype)
{
	return PyUnicode_FromString(cow_dtype_name(dtype));
}

static int
dtype_from_name(const char *name, cow_dtype_t *out)
{
	static const struct { const char *alias; cow_dtype_t dtype; } aliases[] = {
		{ "float", COW_DTYPE_FLOAT64 }, { "int", COW_DTYPE_INT64 },
		{ "complex", COW_DTYPE_COMPLEX128 }, { "half", COW_DTYPE_FLOAT16 },
		{ "double", COW_DTYPE_FLOAT64 }, { "long", COW_DTYPE_INT64 },
		{ "cfloat", COW_DTYPE_COMPLEX64 }, { "cdouble", COW_DTYPE_COMPLEX128 },
		{ "bool_", COW_DTYPE_BOOL },
	};
	if (strncmp(name, "torch.", 6) == 0)
		name += 6;
	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		if (strcmp(name, cow_dtype_name((cow_dtype_t)d)) == 0) {
			*out = (cow_dtype_t)d;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
		if (strcmp(name, aliases[i].alias) == 0) {
			*out = aliases[i].dtype;
			return 0;
		}
	}
	return -1;
}

int
pycow_dtype_from_object(PyObject *obj, cow_dtype_t *out, const char *func)
{
	PyObject *name = NULL;

	if (obj == (PyObject *)&PyFloat_Type)
		return *out = COW_DTYPE_FLOAT64, 0;
	if (obj == (PyObject *)&PyLong_Type)
		return *out = COW_DTYPE_INT64, 0;
	if (obj == (PyObject *)&PyBool_Type)
		return *out = COW_DTYPE_BOOL, 0;
	if (obj == (PyObject *)&PyComplex_Type)
		return *out = COW_DTYPE_COMPLEX128, 0;
	if (PyUnicode_Check(obj)) {
		name = Py_NewRef(obj);
	} else if (PyType_Check(obj)) {          /* numpy.float32 */
		name = PyObject_GetAttrString(obj, "__name__");
	} else if (PyObject_HasAttrString(obj, "name") &&
	    !PyObject_HasAttrString(obj, "is_floating_point")) {
		name = PyObject_GetAttrString(obj, "name");   /* numpy.dtype */
	} else {
		name = PyObject_Str(obj);            /* torch.float32 */
	}
	if (name == NULL)
		return -1;
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (s != NULL && dtype_from_name(s, out) == 0) {
		Py_DECREF(name);
		return 0;
	}
	if (!PyErr_Occurred())
		PyErr_Format(PyExc_TypeError, "%s: unknown dtype %R "
		    "(known: bool, int8, int16, int32, int64, uint8, uint16, "
		    "uint32, uint64, float16, bfloat16, float32, float64, "
		    "complex64, complex128)", func, obj);
	Py_DECREF(name);
	return -1;
}

int
pycow_dtype_from_format(const char *format, Py_ssize_t itemsize,
    cow_dtype_t *out)
{
	const char *f = format != NULL ? format : "B";

	if (*f == '@' || *f == '=' || *f == '<')   /* native order, x86/arm */
		f++;
	/* 'l' and 'L' are C long: 8 bytes here, as int64. */
	if (strcmp(f, "l") == 0 && itemsize == 8)
		f = "q";
	else if (strcmp(f, "L") == 0 && itemsize == 8)
		f = "Q";
	else if (strcmp(f, "c") == 0)
		f = "B";
	for (int d = 0; d < COW_DTYPE_COUNT; d++) {
		if (formats[d] != NULL && strcmp(f, formats[d]) == 0 &&
		    (size_t)itemsize == cow_dtype_size((cow_dtype_t)d)) {
			*out = (cow_dtype_t)d;
			return 0;
		}
	}
	PyErr_Format(PyExc_TypeError, "cowstore: the buffer's format '%s' "
	    "(item size %zd) is not a dtype cowstore knows", f, itemsize);
	return -1;
}

int
pycow_int64_arg(PyObject *obj, int64_t *out, const char *func, const char *arg)
{
	int overflow;
	long long v;
	PyObject *i = PyNumber_Index(obj);

	if (i == NULL) {
		if (PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError, "%s: %s is an int, not "
			    "%.100s", func, arg, Py_TYPE(obj)->tp_name);
		}
		return -1;
	}
	v = PyLong_AsLongLongAndOverflow(i, &overflow);
	Py_DECREF(i);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (overflow != 0) {
		PyErr_Format(PyExc_OverflowError, "%s: %s %R is outside the "
		    "int64 range", func, arg, obj);
		return -1;
	}
	*out = v;
	return 0;
}

int
pycow_dim_arg(PyObject *obj, int *out, const char *func, const char *arg)
{
	int64_t v;

	if (pycow_int64_arg(obj, &v, func, arg) < 0)
		return -1;
	/* The library checks it against the tensor's ndim; this keeps it
	 * an int. */
	if (v < -COW_TENSOR_MAX_NDIM - 1 || v > COW_TENSOR_MAX_NDIM) {
		PyErr_Format(PyExc_IndexError, "%s: %s %lld is out of range",
		    func, arg, (long long)v);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int
pycow_parse_shape(PyObject *args, int64_t *sizes, const char *func,
    const char *arg)
{
	PyObject *seq = args;

	if (PyLong_Check(args))
		return pycow_int64_arg(args, &sizes[0], func, arg) < 0 ? -1 : 1;
	if (PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 &&
	    !PyLong_Check(PyTuple_GET_ITEM(args, 0)))
		seq = PyTuple_GET_ITEM(args, 0);
	bool sequence = PySequence_Check(seq) && !PyUnicode_Check(seq) &&
	    !PyBytes_Check(seq);
	if (!sequence && PyIndex_Check(seq))     /* an int, numpy.int64(3) */
		return pycow_int64_arg(seq, &sizes[0], func, arg) < 0 ? -1 : 1;
	if (!sequence) {
		PyErr_Format(PyExc_TypeError, "%s: %s is an int or a sequence "
		    "of ints, not %.100s", func, arg, Py_TYPE(seq)->tp_name);
		return -1;
	}
	PyObject *fast = PySequence_Fast(seq, "");
	if (fast == NULL)
		return -1;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
	if (n > COW_TENSOR_MAX_NDIM) {
		Py_DECREF(fast);
		PyErr_Format(PyExc_ValueError, "%s: %s has %zd entries; at "
		    "most %d", func, arg, n, COW_TENSOR_MAX_NDIM);
		return -1;
	}
	char entry[64];
	snprintf(entry, sizeof entry, "each entry of %s", arg);
	for (Py_ssize_t i = 0; i < n; i++) {
		if (pycow_int64_arg(PySequence_Fast_GET_ITEM(fast, i), &sizes[i],
		    func, entry) < 0) {
			Py_DECREF(fast);
			return -1;
		}
	}
	Py_DECREF(fast);
	return (int)n;
}

int
pycow_shape_check(int ndim, const int64_t *sizes, size_t itemsize,
    int64_t *numel, const char *func)
{
	return pycow_check(cow__named(cow__shape_check(ndim, sizes, itemsize,
	    numel, NULL), func));
}

int
pycow_byte_strides(const cow_tensor_t *t, int64_t *out, const char *func)
{
	int n = cow_tensor_ndim(t);
	const int64_t *sizes = cow_tensor_sizes(t);
	const int64_t *strides = cow_tensor_strides(t);
	int64_t item = (int64_t)cow_dtype_size(cow_tensor_dtype(t));
	bool empty = cow_tensor_numel(t) == 0;

	for (int d = 0; d < n; d++) {
		if (!__builtin_mul_overflow(strides[d], item, &out[d]))
			continue;
		/* A stride no element applies (shape.h: saturated). */
		if (empty || sizes[d] == 1) {
			out[d] = INT64_MAX;
			continue;
		}
		return pycow_check(cow__named(cow__error(COW_EOVERFLOW,
		    "the byte stride of dimension %d (%lld elements of %lld "
		    "bytes) overflows", d, (long long)strides[d],
		    (long long)item), func));
	}
	return 0;
}

PyObject *
pycow_int64_tuple(const int64_t *v, int n)
{
	PyObject *tuple = PyTuple_New(n);
	for (int i = 0; tuple != NULL && i < n; i++) {
		PyObject *item = PyLong_FromLongLong(v[i]);
		if (item == NULL) {
			Py_CLEAR(tuple);
			break;
		}
		PyTuple_SET_ITEM(tuple, i, item);
	}
	return tuple;
}

PyObject *
pycow_element(const cow_tensor_t *t, const int64_t *index)
{
	cow_dtype_t d = cow_tensor_dtype(t);

	if (cow__dtype_is_complex(d)) {
		/* Both parts: get_f64 gives only the real one. */
		const char *p = cow_tensor_const_data(t);
		if (p == NULL) {
			pycow_check(COW_EALIASING);
			return NULL;
		}
		/* In range: index[i] < sizes[i], so each product and the
		 * sum stay within the extent the library checked. */
		const int64_t *strides = cow_tensor_strides(t);
		int64_t off = 0;
		for (int i = 0; i < cow_tensor_ndim(t); i++)
			off += index[i] * strides[i];
		p += off * (int64_t)cow_dtype_size(d);
		if (d == COW_DTYPE_COMPLEX64) {
			float v[2];
			memcpy(v, p, sizeof v);
			return PyComplex_FromDoubles(v[0], v[1]);
		}
		double v[2];
		memcpy(v, p, sizeof v);
		return PyComplex_FromDoubles(v[0], v[1]);
	}
	if (cow__dtype_is_float(d)) {
		double v;
		if (pycow_check(cow_tensor_get_f64(t, index, &v)) < 0)
			return NULL;
		return PyFloat_FromDouble(v);
	}
	int64_t v;
	if (pycow_check(cow_tensor_get_i64(t, index, &v)) < 0)
		return NULL;
	if (d == COW_DTYPE_BOOL)
		return PyBool_FromLong(v != 0);
	if (d == COW_DTYPE_UINT64)
		return PyLong_FromUnsignedLongLong((unsigned long long)v);
	return PyLong_FromLongLong(v);
}

int
pycow_is_scalar(PyObject *obj)
{
	return PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj) ||
	    PyComplex_Check(obj);
}

/* An int beyond int64 (or uint64) as @dtype takes it, NumPy's way: a
 * floating or complex dtype through float64 (OverflowError beyond
 * float64's range, as float(value)), bool as true. Otherwise false. */
static bool
takes_big_ints(cow_dtype_t dtype)
{
	return cow__dtype_is_float(dtype) || cow__dtype_is_complex(dtype) ||
	    dtype == COW_DTYPE_BOOL;
}

/* A 0-d tensor holding @value exactly: bool, int64 (uint64 above
 * INT64_MAX), float64 or complex128; an int beyond those for a @target
 * that takes_big_ints(), as float64. */
static cow_tensor_t *
exact_scalar(PyObject *value, cow_dtype_t target)
{
	cow_tensor_t *s = NULL;
	cow_status_t st;

	if (PyBool_Check(value)) {
		uint8_t b = value == Py_True;
		st = cow_tensor_from_data(COW_DTYPE_BOOL, 0, NULL, &b, NULL, &s);
	} else if (PyLong_Check(value)) {
		int overflow;
		long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
		if (v == -1 && PyErr_Occurred())
			return NULL;
		if (overflow != 0 && takes_big_ints(target)) {
			double f = PyLong_AsDouble(value);
			if (f == -1.0 && PyErr_Occurred())
				return NULL;
			st = cow_tensor_from_data(COW_DTYPE_FLOAT64, 0, NULL, &f,
			    NULL, &s);
		} else if (overflow > 0) {
			unsigned long long u = PyLong_AsUnsignedLongLong(value);
			if (u == (unsigned long long)-1 && PyErr_Occurred()) {
				if (!PyErr_ExceptionMatches(PyExc_OverflowError))
					return NULL;
				PyErr_Clear();
				PyErr_Format(PyExc_OverflowError, "cowstore: %R "
				    "is beyond 2**64 - 1: %s cannot hold it",
				    value, cow_dtype_name(target));
				return NULL;
			}
			st = cow_tensor_from_data(COW_DTYPE_UINT64, 0, NULL, &u,
			    NULL, &s);
		} else if (overflow < 0) {
			PyErr_Format(PyExc_OverflowError, "cowstore: %R is "
			    "below -2**63: %s cannot hold it", value,
			    cow_dtype_name(target));
			return NULL;
		} else {
			int64_t i = v;
			st = cow_tensor_from_data(COW_DTYPE_INT64, 0, NULL, &i,
			    NULL, &s);
		}
	} else if (PyFloat_Check(value)) {
		double f = PyFloat_AS_DOUBLE(value);
		st = cow_tensor_from_data(COW_DTYPE_FLOAT64, 0, NULL, &f, NULL, &s);
	} else if (PyComplex_Check(value)) {
		double c[2] = { PyComplex_RealAsDouble(value),
		    PyComplex_ImagAsDouble(value) };
		st = cow_tensor_from_data(COW_DTYPE_COMPLEX128, 0, NULL, c, NULL,
		    &s);
	} else {
		PyErr_Format(PyExc_TypeError, "cowstore: expected a Tensor or a "
		    "Python scalar, got %.100s", Py_TYPE(value)->tp_name);
		return NULL;
	}
	return pycow_check(st) < 0 ? NULL : s;
}

/* May @value be passed to cow_tensor_fill_ as a double, with the result
 * a copy_ from its exact scalar would give? A float (the same conversion
 * from float64); an integer that a double holds exactly, into a floating
 * dtype or an integer dtype whose range holds it (there int-to-int wraps
 * and double-to-int saturates, equal in range); a bool. */
static bool
fill_as_double(cow_dtype_t dt, PyObject *value, double *out)
{
	static const struct { cow_dtype_t dt; double lo, hi; } ranges[] = {
		{ COW_DTYPE_INT8, -128, 127 }, { COW_DTYPE_UINT8, 0, 255 },
		{ COW_DTYPE_INT16, -32768, 32767 }, { COW_DTYPE_UINT16, 0, 65535 },
		{ COW_DTYPE_INT32, -2147483648.0, 2147483647.0 },
		{ COW_DTYPE_UINT32, 0, 4294967295.0 },
		{ COW_DTYPE_INT64, -9007199254740992.0, 9007199254740992.0 },
		{ COW_DTYPE_UINT64, 0, 9007199254740992.0 },
		{ COW_DTYPE_BOOL, -9007199254740992.0, 9007199254740992.0 },
	};
	if (PyFloat_CheckExact(value)) {
		*out = PyFloat_AS_DOUBLE(value);
		return true;
	}
	if (!PyLong_Check(value))
		return false;
	int overflow;
	long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
	if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
		PyErr_Clear();
		return false;
	}
	if (v < -9007199254740992LL || v > 9007199254740992LL)
		return false;
	*out = (double)v;
	for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
		if (ranges[i].dt == dt)
			return *out >= ranges[i].lo && *out <= ranges[i].hi;
	return true;   /* a floating or complex dtype */
}

int
pycow_fill(cow_tensor_t *t, PyObject *value)
{
	cow_tensor_t *s;
	cow_status_t st;
	double d;

	if (fill_as_double(cow_tensor_dtype(t), value, &d)) {
		PYCOW_LOCKED1(t, true, st = cow_tensor_fill_(t, d));
		return pycow_check(st);
	}

	/* Converted once, to @t's dtype (ops.h's rules): the fill is then a
	 * copy of one dtype, which stores the same bytes everywhere. */
	if (pycow_scalar_like(value, cow_tensor_dtype(t), &s) < 0)
		return -1;
	/* @s is ours alone: only @t's storage needs its stripe. */
	PYCOW_LOCKED1(t, true, st = cow_tensor_copy_(t, s));
	cow_tensor_release(s);
	return pycow_check(st);
}

/* --- tensor(nested sequences) --------------------------------------- */

struct nested {
	int ndim;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	/* Filled by the walk: */
	cow_dtype_t kind;            /* bool < int64 < float64 < complex128 */
	size_t pos;                  /* elements written */
	bool big;                    /* an int beyond int64 was seen */
	bool big_not_u64;            /* ... one beyond uint64 too */
	PyObject *first_big;         /* the first such int */
};

static int
kind_rank(cow_dtype_t d)
{
	return d == COW_DTYPE_BOOL ? 0 : d == COW_DTYPE_INT64 ? 1 :
	    d == COW_DTYPE_FLOAT64 ? 2 : 3;
}

/* Shape from the first elements, then every element checked by the walk. */
static int
nested_shape(PyObject *obj, struct nested *n)
{
	PyObject *cur = Py_NewRef(obj);

	n->ndim = 0;
	while (!pycow_is_scalar(cur)) {
		if (!PySequence_Check(cur) || PyUnicode_Check(cur) ||
		    PyBytes_Check(cur)) {
			PyErr_Format(PyExc_TypeError, "cowstore.tensor: expected "
			    "nested sequences of numbers, found %.100s",
			    Py_TYPE(cur)->tp_name);
			goto fail;
		}
		if (n->ndim == COW_TENSOR_MAX_NDIM) {
			PyErr_Format(PyExc_ValueError, "cowstore.tensor: more "
			    "than %d dimensions", COW_TENSOR_MAX_NDIM);
			goto fail;
		}
		Py_ssize_t len = PySequence_Size(cur);
		if (len < 0)
			goto fail;
		n->sizes[n->ndim++] = len;
		if (len == 0)
			break;
		/* A new reference: a range or a generated sequence makes the
		 * item it returns, and nothing else keeps it alive. */
		PyObject *first = PySequence_GetItem(cur, 0);
		Py_DECREF(cur);
		if (first == NULL)
			return -1;
		cur = first;
	}
	Py_DECREF(cur);
	return 0;
fail:
	Py_DECREF(cur);
	return -1;
}

/* One scalar into element n->pos: (real, imaginary) in @out, the exact
 * integer in @ints (uint64 bit patterns above INT64_MAX). */
static int
nested_scalar(PyObject *obj, struct nested *n, double *out, int64_t *ints)
{
	cow_dtype_t k = PyBool_Check(obj) ? COW_DTYPE_BOOL :
	    PyLong_Check(obj) ? COW_DTYPE_INT64 :
	    PyFloat_Check(obj) ? COW_DTYPE_FLOAT64 : COW_DTYPE_COMPLEX128;
	size_t pos = n->pos;

	if (kind_rank(k) > kind_rank(n->kind))
		n->kind = k;
	if (PyLong_Check(obj)) {
		int overflow;
		long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
		if (v == -1 && PyErr_Occurred())
			return -1;
		if (overflow != 0) {
			unsigned long long u = 0;
			bool u64 = false;
			if (overflow > 0) {
				u = PyLong_AsUnsignedLongLong(obj);
				u64 = u != (unsigned long long)-1 ||
				    !PyErr_Occurred();
				if (!u64 && !PyErr_ExceptionMatches(
				    PyExc_OverflowError))
					return -1;
				PyErr_Clear();
			}
			n->big_not_u64 |= !u64;
			if (!n->big)
				n->first_big = Py_NewRef(obj);
			n->big = true;
			v = (long long)u;
			out[2 * pos] = PyLong_AsDouble(obj);
			if (out[2 * pos] == -1.0 && PyErr_Occurred())
				return -1;   /* beyond float64: OverflowError */
		} else {
			out[2 * pos] = (double)v;
		}
		ints[pos] = v;
		out[2 * pos + 1] = 0;
	} else {
		Py_complex c = PyComplex_AsCComplex(obj);
		if (c.real == -1.0 && PyErr_Occurred())
			return -1;
		out[2 * pos] = c.real;
		out[2 * pos + 1] = c.imag;
		ints[pos] = 0;
	}
	n->pos++;
	return 0;
}

static int
nested_walk(PyObject *obj, int dim, struct nested *n, double *out,
    int64_t *ints)
{
	if (dim == n->ndim) {
		if (!pycow_is_scalar(obj)) {
			PyErr_SetString(PyExc_ValueError, "cowstore.tensor: the "
			    "sequences are nested unevenly");
			return -1;
		}
		return nested_scalar(obj, n, out, ints);
	}
	if (pycow_is_scalar(obj) || !PySequence_Check(obj) ||
	    PySequence_Size(obj) != n->sizes[dim]) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_ValueError, "cowstore.tensor: the "
			    "sequences are nested unevenly");
		return -1;
	}
	for (Py_ssize_t i = 0; i < n->sizes[dim]; i++) {
		PyObject *item = PySequence_GetItem(obj, i);
		if (item == NULL)
			return -1;
		int rc = nested_walk(item, dim + 1, n, out, ints);
		Py_DECREF(item);
		if (rc < 0)
			return -1;
	}
	return 0;
}

PyObject *
pycow_tensor_from_sequence(PyObject *data, PyObject *dtype_obj)
{
	struct nested n = { .kind = COW_DTYPE_BOOL };
	int64_t count;
	double *vals = NULL;
	int64_t *ints = NULL;
	cow_dtype_t kind, want;
	bool want_given = dtype_obj != NULL && dtype_obj != Py_None;
	PyObject *result = NULL;
	cow_tensor_t *src = NULL, *dst = NULL;

	if (nested_shape(data, &n) < 0)
		return NULL;
	/* The element count as the library bounds it (the walk writes at most
	 * that many elements), before any buffer is sized by it. */
	if (pycow_shape_check(n.ndim, n.sizes, 1, &count,
	    "cowstore.tensor") < 0)
		return NULL;
	if (want_given && pycow_dtype_from_object(dtype_obj, &want,
	    "cowstore.tensor") < 0)
		return NULL;
	size_t numel = (size_t)count;
	/* Every value as (real, imaginary) pairs: complex128's layout.
	 * PyMem_Calloc checks the products against PY_SSIZE_T_MAX. */
	vals = PyMem_Calloc(numel ? numel : 1, 2 * sizeof *vals);
	ints = PyMem_Calloc(numel ? numel : 1, sizeof *ints);
	if (vals == NULL || ints == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	if (nested_walk(data, 0, &n, vals, ints) < 0)
		goto out;
	kind = numel == 0 ? COW_DTYPE_FLOAT64 : n.kind;   /* NumPy's default */
	if (!want_given)
		want = kind;
	if (n.big) {
		/* Ints beyond int64: only a dtype that takes them (NumPy
		 * makes an object array without one). */
		if (want_given && takes_big_ints(want)) {
			if (kind == COW_DTYPE_BOOL || kind == COW_DTYPE_INT64)
				kind = COW_DTYPE_FLOAT64;
		} else if (!(want_given && want == COW_DTYPE_UINT64 &&
		    !n.big_not_u64 && kind == COW_DTYPE_INT64)) {
			PyErr_Format(PyExc_OverflowError, "cowstore.tensor: "
			    "%R is outside the int64 range: %s", n.first_big,
			    want_given ? "the dtype cannot hold it" : "pass a "
			    "dtype that holds it (a floating or complex one, "
			    "or uint64 up to 2**64 - 1)");
			goto out;
		}
	}
	/* Exact values first, in the widest kind seen, then converted. */
	if (kind == COW_DTYPE_INT64 || kind == COW_DTYPE_BOOL) {
		if (kind == COW_DTYPE_BOOL)
			for (size_t i = 0; i < numel; i++)
				((uint8_t *)ints)[i] = ints[i] != 0 ||
				    vals[2 * i] != 0;
		if (pycow_check(cow_tensor_from_data(kind, n.ndim, n.sizes, ints,
		    NULL, &src)) < 0)
			goto out;
	} else if (kind == COW_DTYPE_FLOAT64) {
		/* The real parts, packed in place (vals[2i] is read before
		 * vals[i] is written, for every i). */
		for (size_t i = 0; i < numel; i++)
			vals[i] = vals[2 * i];
		if (pycow_check(cow_tensor_from_data(kind, n.ndim, n.sizes, vals,
		    NULL, &src)) < 0)
			goto out;
	} else if (pycow_check(cow_tensor_from_data(kind, n.ndim, n.sizes, vals,
	    NULL, &src)) < 0) {
		goto out;
	}
	if (want == kind) {
		result = pycow_wrap(src);
		src = NULL;
		goto out;
	}
	if (pycow_check(cow_tensor_empty(want, n.ndim, n.sizes, NULL, &dst)) < 0 ||
	    pycow_check(cow_tensor_copy_(dst, src)) < 0)
		goto out;
	result = pycow_wrap(dst);
	dst = NULL;
out:
	cow_tensor_release(src);
	cow_tensor_release(dst);
	PyMem_Free(vals);
	PyMem_Free(ints);
	Py_XDECREF(n.first_big);
	return result;
}

int
pycow_scalar_like(PyObject *value, cow_dtype_t dtype, cow_tensor_t **out)
{
	cow_tensor_t *s = exact_scalar(value, dtype), *t = NULL;
	if (s == NULL)
		return -1;
	int rc = pycow_check(cow_tensor_empty(dtype, 0, NULL, NULL, &t));
	if (rc == 0 && (rc = pycow_check(cow_tensor_copy_(t, s))) < 0)
		cow_tensor_release(t);
	cow_tensor_release(s);
	if (rc == 0)
		*out = t;
	return rc;
}

cow_status_t
pycow_read_then_lazy_clone(cow_tensor_t *t, cow_tensor_t **out)
{
	const void *data;
	cow_status_t rc = cow_tensor_read_data(t, &data);
	if (rc != COW_OK)
		return rc;   /* refused: cow_last_error() says why */
	return cow_tensor_lazy_clone(t, out);
}
