/*
 * tensor.c - the Tensor type: lifetime, attributes, views, copies, repr,
 * and the module's constructors.
 */
#include <string.h>

#include "pycow.h"

PyObject *
pycow_wrap(cow_tensor_t *t)
{
	/* Not tracked by the cycle collector: a Tensor holds no Python
	 * object, so it can close no cycle. */
	pycow_tensor *self = PyObject_New(pycow_tensor, &pycow_tensor_type);
	if (self == NULL) {
		cow_tensor_release(t);
		return NULL;
	}
	self->t = t;
	self->weakrefs = NULL;
	return (PyObject *)self;
}

#define T(o) (((pycow_tensor *)(o))->t)

static void
tensor_dealloc(PyObject *self)
{
	if (((pycow_tensor *)self)->weakrefs != NULL)
		PyObject_ClearWeakRefs(self);
	/* No stripe: nobody else uses this reference. The last release may
	 * run a producer's deleter, which takes the GIL (held: re-entrant). */
	cow_tensor_release(T(self));
	PyObject_Free(self);
}

/* --- attributes ---------------------------------------------------- */

static PyObject *
get_shape(PyObject *self, void *c)
{
	(void)c;
	return pycow_int64_tuple(cow_tensor_sizes(T(self)), cow_tensor_ndim(T(self)));
}

static PyObject *
get_strides(PyObject *self, void *c)
{
	(void)c;
	int64_t bytes[COW_TENSOR_MAX_NDIM];
	if (pycow_byte_strides(T(self), bytes, "Tensor.strides") < 0)
		return NULL;
	return pycow_int64_tuple(bytes, cow_tensor_ndim(T(self)));
}

static PyObject *
get_ndim(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromLong(cow_tensor_ndim(T(self)));
}

static PyObject *
get_dtype(PyObject *self, void *c)
{
	(void)c;
	return pycow_dtype_name(cow_tensor_dtype(T(self)));
}

static PyObject *
get_itemsize(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromSize_t(cow_dtype_size(cow_tensor_dtype(T(self))));
}

static PyObject *
get_nbytes(PyObject *self, void *c)
{
	(void)c;
	/* The library keeps numel * itemsize within COW_STORAGE_MAX_NBYTES
	 * (views and expands included). */
	return PyLong_FromLongLong(cow_tensor_numel(T(self)) *
	    (int64_t)cow_dtype_size(cow_tensor_dtype(T(self))));
}

static PyObject *
get_offset(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromLongLong(cow_tensor_offset(T(self)));
}

static PyObject *
view_result(cow_status_t st, cow_tensor_t **out)
{
	/* @out by address: C leaves the order of argument evaluation open,
	 * so view_result(f(&out), out) could read out before f writes it. */
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(*out);
}

static PyObject *
get_T(PyObject *self, void *c)
{
	(void)c;
	int n = cow_tensor_ndim(T(self));
	int dims[COW_TENSOR_MAX_NDIM];
	cow_tensor_t *out = NULL;
	for (int i = 0; i < n; i++)
		dims[i] = n - 1 - i;
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_permute(T(self), n, dims, &out));
	return view_result(st, &out);
}

PyGetSetDef pycow_tensor_getset[] = {
	{ "shape", get_shape, NULL, "the sizes, a tuple", NULL },
	{ "strides", get_strides, NULL, "NumPy's strides: bytes, a tuple", NULL },
	{ "ndim", get_ndim, NULL, "the number of dimensions", NULL },
	{ "dtype", get_dtype, NULL, "the dtype's NumPy-style name", NULL },
	{ "itemsize", get_itemsize, NULL, "bytes per element", NULL },
	{ "nbytes", get_nbytes, NULL, "numel() * itemsize", NULL },
	{ "offset", get_offset, NULL, "the storage offset, in elements", NULL },
	{ "T", get_T, NULL, "the dimensions reversed (a view)", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

/* --- simple methods ------------------------------------------------ */

static PyObject *
m_stride(PyObject *self, PyObject *unused)
{
	(void)unused;
	return pycow_int64_tuple(cow_tensor_strides(T(self)), cow_tensor_ndim(T(self)));
}

static PyObject *
m_numel(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyLong_FromLongLong(cow_tensor_numel(T(self)));
}

static PyObject *
m_data_ptr(PyObject *self, PyObject *unused)
{
	(void)unused;
	const void *p;
	PYCOW_LOCKED1(T(self), false, p = cow_tensor_const_data(T(self)));
	if (p == NULL && cow_tensor_numel(T(self)) > 0) {
		pycow_check(COW_EALIASING);
		return NULL;
	}
	if (pycow_flush_warnings() < 0)
		return NULL;
	return PyLong_FromVoidPtr((void *)p);
}

static PyObject *
m_is_contiguous(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyBool_FromLong(cow_tensor_is_contiguous(T(self)));
}

static PyObject *
m_is_pinned(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyBool_FromLong(cow_storage_is_pinned(cow_tensor_storage(T(self))));
}

static PyObject *
m_is_read_only(PyObject *self, PyObject *unused)
{
	(void)unused;
	bool ro;
	PYCOW_LOCKED1(T(self), false,
	    ro = cow_storage_is_read_only(cow_tensor_storage(T(self))));
	return PyBool_FromLong(ro);
}

static PyObject *
m_is_functional(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyBool_FromLong(cow_tensor_is_functional(T(self)));
}

static int
tensor_arg(PyObject *obj, cow_tensor_t **out)
{
	if (!pycow_tensor_check(obj)) {
		PyErr_Format(PyExc_TypeError, "cowstore: expected a Tensor, got "
		    "%.100s", Py_TYPE(obj)->tp_name);
		return -1;
	}
	*out = T(obj);
	return 0;
}

static PyObject *
m_shares_storage(PyObject *self, PyObject *other)
{
	cow_tensor_t *o;
	if (tensor_arg(other, &o) < 0)
		return NULL;
	cow_storage_t *a = cow_tensor_storage(T(self));
	return PyBool_FromLong(a != NULL && a == cow_tensor_storage(o));
}

static PyObject *
m_shares_data(PyObject *self, PyObject *other)
{
	cow_tensor_t *o;
	if (tensor_arg(other, &o) < 0)
		return NULL;
	struct pycow_guard g = { 0 };
	bool shares;
	pycow_guard_add(&g, T(self), false);
	pycow_guard_add(&g, o, false);
	PYCOW_LOCKED(&g, shares = cow_storage_shares_data(
	    cow_tensor_storage(T(self)), cow_tensor_storage(o)));
	return PyBool_FromLong(shares);
}

/* What len() of a 0-d tensor adds to NumPy's message, as a note (PEP
 * 678): PyTorch 1.13's torch.as_tensor() and torch.tensor() take an object
 * that is neither a torch tensor nor a NumPy array as nested sequences, and
 * the walk ends at this len() of a 0-d element, so this is the error they
 * raise for a Tensor (docs/python.md, "PyTorch and NumPy"). */
static const char zero_d_len_note[] =
    "cowstore: a 0-d tensor has no len(), as a 0-d NumPy array; "
    "torch.as_tensor() and torch.tensor() read a cowstore.Tensor as nested "
    "sequences and fail here: use torch.from_dlpack(t) (zero copy; "
    "torch.from_dlpack(t).clone() for a copy; bool: "
    "torch.from_numpy(t.numpy()))";

/* NumPy's TypeError, "len() of unsized object", with the note. */
static void
set_zero_d_len_error(void)
{
	PyObject *exc = PyObject_CallFunction(PyExc_TypeError, "s",
	    "len() of unsized object");
	if (exc == NULL)
		return;
#if PY_VERSION_HEX >= 0x030B0000
	PyObject *r = PyObject_CallMethod(exc, "add_note", "s", zero_d_len_note);
	if (r == NULL) {
		Py_DECREF(exc);
		return;
	}
	Py_DECREF(r);
#endif
	PyErr_SetObject(PyExc_TypeError, exc);
	Py_DECREF(exc);
}

static Py_ssize_t
tensor_len(PyObject *self)
{
	if (cow_tensor_ndim(T(self)) == 0) {
		set_zero_d_len_error();
		return -1;
	}
	return (Py_ssize_t)cow_tensor_sizes(T(self))[0];
}

/* Iteration over dimension 0 (the sequence protocol's t[0], t[1], ...);
 * a 0-d tensor has no dimension to iterate, as len() says (NumPy's
 * message). */
static PyObject *
tensor_iter(PyObject *self)
{
	if (cow_tensor_ndim(T(self)) == 0) {
		PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
		return NULL;
	}
	return PySeqIter_New(self);
}

/* --- copies -------------------------------------------------------- */

typedef cow_status_t (*copy_fn)(cow_tensor_t *, cow_tensor_t **);

static cow_status_t
clone_fn(cow_tensor_t *t, cow_tensor_t **out)
{
	return cow_tensor_clone(t, out);
}

/* A copy (eager or lazy): the GIL is released around it. */
static PyObject *
copy_with(PyObject *self, copy_fn fn)
{
	cow_tensor_t *out = NULL;
	cow_status_t st;
	PYCOW_LOCKED1(T(self), false, st = fn(T(self), &out));
	return view_result(st, &out);
}

/* Also copy.copy (METH_NOARGS) and copy.deepcopy (METH_O, @unused the
 * memo): a tensor of its own, as NumPy's copies are; a lazy clone is one
 * (O(1): the bytes are copied by the first write through either side, or
 * now when the storage is pinned). A Tensor holds no Python object, so
 * deepcopy has nothing more to copy. */
static PyObject *
m_lazy_clone(PyObject *self, PyObject *unused)
{
	(void)unused;
	return copy_with(self, cow_tensor_lazy_clone);
}

static PyObject *
m_clone(PyObject *self, PyObject *unused)
{
	(void)unused;
	return copy_with(self, clone_fn);
}

static PyObject *
m_contiguous(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (cow_tensor_is_contiguous(T(self)))
		return Py_NewRef(self);
	return copy_with(self, cow_tensor_contiguous);
}

/* --- pickling ------------------------------------------------------ */

/* pickle: cowstore._rebuild(data, dtype, shape, read_only), data the
 * values' bytes in C order (a view pickles as its values), read_only
 * whether the storage's memory is read-only (cow_storage_is_read_only:
 * an unpickled copy is read-only memory too). */
static PyObject *
m_reduce(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_tensor_t *t = T(self), *snap = NULL;
	bool ro = false;
	cow_status_t st;
	PyObject *mod, *fn = NULL, *data = NULL, *shape = NULL, *r = NULL;

	/* One read of @t, as a snapshot: values and flag of one moment. */
	if (cow_tensor_is_functional(t)) {
		PYCOW_LOCKED1(t, false, st = cow_functional_to_plain(t, &snap));
	} else {
		PYCOW_LOCKED1(t, false,
		    ro = cow_storage_is_read_only(cow_tensor_storage(t));
		    st = cow_tensor_clone(t, &snap));
	}
	if (pycow_check(st) < 0)
		return NULL;
	/* Contiguous (clone, to_plain): numel * itemsize bytes from the
	 * first element, a size the library bounds. */
	int64_t nbytes = cow_tensor_numel(snap) *
	    (int64_t)cow_dtype_size(cow_tensor_dtype(snap));
	const void *p = nbytes > 0 ? cow_tensor_const_data(snap) : NULL;
	if (nbytes > 0 && p == NULL)
		pycow_check(COW_EALIASING);
	else if ((mod = PyImport_ImportModule("cowstore")) != NULL) {
		fn = PyObject_GetAttrString(mod, "_rebuild");
		Py_DECREF(mod);
		data = PyBytes_FromStringAndSize(p, (Py_ssize_t)nbytes);
		shape = get_shape(self, NULL);
	}
	if (fn != NULL && data != NULL && shape != NULL)
		r = Py_BuildValue("O(OsOO)", fn, data,
		    cow_dtype_name(cow_tensor_dtype(snap)), shape,
		    ro ? Py_True : Py_False);
	Py_XDECREF(fn);
	Py_XDECREF(data);
	Py_XDECREF(shape);
	cow_tensor_release(snap);
	return r;
}

/* cowstore._rebuild (pickle's reconstructor): read-only memory over @data
 * itself (from_buffer(data, dtype, shape, read_only=True)), or a tensor
 * holding a copy of it. */
static PyObject *
f_rebuild(PyObject *mod, PyObject *args)
{
	PyObject *data, *dtype_obj, *shape_obj, *r = NULL;
	int read_only;
	int64_t sizes[COW_TENSOR_MAX_NDIM], numel;
	cow_dtype_t dtype;
	cow_tensor_t *out = NULL;
	Py_buffer view;

	if (!PyArg_ParseTuple(args, "OOOp:_rebuild", &data, &dtype_obj,
	    &shape_obj, &read_only))
		return NULL;
	if (read_only) {
		PyObject *a = PyTuple_Pack(3, data, dtype_obj, shape_obj);
		PyObject *kw = Py_BuildValue("{sO}", "read_only", Py_True);
		if (a != NULL && kw != NULL)
			r = pycow_from_buffer(mod, a, kw);
		Py_XDECREF(a);
		Py_XDECREF(kw);
		return r;
	}
	int n = pycow_parse_shape(shape_obj, sizes, "_rebuild", "shape");
	if (n < 0 || pycow_dtype_from_object(dtype_obj, &dtype, "_rebuild") < 0 ||
	    pycow_shape_check(n, sizes, cow_dtype_size(dtype), &numel,
	    "_rebuild") < 0 ||
	    PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0)
		return NULL;
	/* numel * itemsize fits: the shape check bounds it. */
	if (view.len != numel * (int64_t)cow_dtype_size(dtype)) {
		PyErr_Format(PyExc_ValueError, "_rebuild: shape %R of %s needs "
		    "%lld bytes; data has %zd", shape_obj, cow_dtype_name(dtype),
		    (long long)(numel * (int64_t)cow_dtype_size(dtype)),
		    view.len);
	} else {
		cow_status_t st;
		st = cow_tensor_from_data(dtype, n, sizes, view.buf, NULL, &out);
		r = view_result(st, &out);
	}
	PyBuffer_Release(&view);
	return r;
}

/* --- views --------------------------------------------------------- */

static PyObject *
m_reshape(PyObject *self, PyObject *args)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int n = pycow_parse_shape(args, sizes, "reshape", "shape");
	cow_tensor_t *out = NULL;
	cow_status_t st;
	if (n < 0)
		return NULL;
	/* A read: it may lazy-clone, or copy when strides forbid a view. */
	PYCOW_LOCKED1(T(self), false, st = cow_tensor_reshape(T(self), n, sizes, &out));
	return view_result(st, &out);
}

static PyObject *
m_view(PyObject *self, PyObject *args)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int n = pycow_parse_shape(args, sizes, "view", "shape");
	cow_tensor_t *out = NULL;
	if (n < 0)
		return NULL;
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_view(T(self), n, sizes, &out));
	return view_result(st, &out);
}

static PyObject *
m_expand(PyObject *self, PyObject *args)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int n = pycow_parse_shape(args, sizes, "expand", "sizes");
	cow_tensor_t *out = NULL;
	if (n < 0)
		return NULL;
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_expand(T(self), n, sizes, &out));
	return view_result(st, &out);
}

static PyObject *
m_transpose(PyObject *self, PyObject *args)
{
	PyObject *o0, *o1;
	int d0, d1;
	cow_tensor_t *out = NULL;
	if (!PyArg_ParseTuple(args, "OO:transpose", &o0, &o1) ||
	    pycow_dim_arg(o0, &d0, "transpose", "dim0") < 0 ||
	    pycow_dim_arg(o1, &d1, "transpose", "dim1") < 0)
		return NULL;
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_transpose(T(self), d0, d1, &out));
	return view_result(st, &out);
}

static PyObject *
m_permute(PyObject *self, PyObject *args)
{
	int64_t d64[COW_TENSOR_MAX_NDIM];
	int dims[COW_TENSOR_MAX_NDIM];
	int n = pycow_parse_shape(args, d64, "permute", "dims");
	cow_tensor_t *out = NULL;
	if (n < 0)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (d64[i] < -COW_TENSOR_MAX_NDIM || d64[i] > COW_TENSOR_MAX_NDIM) {
			PyErr_Format(PyExc_IndexError, "permute: dims entry "
			    "%lld is out of range", (long long)d64[i]);
			return NULL;
		}
		dims[i] = (int)d64[i];
	}
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_permute(T(self), n, dims, &out));
	return view_result(st, &out);
}

static PyObject *
m_unsqueeze(PyObject *self, PyObject *arg)
{
	int d;
	cow_tensor_t *out = NULL;
	if (pycow_dim_arg(arg, &d, "unsqueeze", "dim") < 0)
		return NULL;
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_unsqueeze(T(self), d, &out));
	return view_result(st, &out);
}

static PyObject *
m_squeeze(PyObject *self, PyObject *args)
{
	PyObject *dim = Py_None;
	cow_tensor_t *out = NULL;
	cow_status_t st;
	int d;
	if (!PyArg_ParseTuple(args, "|O:squeeze", &dim))
		return NULL;
	if (dim == Py_None) {
		PYCOW_VIEW(T(self), st = cow_tensor_squeeze_all(T(self), &out));
		return view_result(st, &out);
	}
	if (pycow_dim_arg(dim, &d, "squeeze", "dim") < 0)
		return NULL;
	PYCOW_VIEW(T(self), st = cow_tensor_squeeze(T(self), d, &out));
	return view_result(st, &out);
}

/* --- element access ------------------------------------------------ */

/* Visit every index of @t in row-major order; -1 stops with an error. */
static int
for_each_index(const cow_tensor_t *t, int (*fn)(const int64_t *, void *),
    void *arg)
{
	int n = cow_tensor_ndim(t);
	const int64_t *sizes = cow_tensor_sizes(t);
	int64_t idx[COW_TENSOR_MAX_NDIM] = { 0 };
	if (cow_tensor_numel(t) == 0)
		return 0;
	for (;;) {
		if (fn(idx, arg) < 0)
			return -1;
		int d = n - 1;
		while (d >= 0 && ++idx[d] == sizes[d])
			idx[d--] = 0;
		if (d < 0)
			return 0;
	}
}

cow_tensor_t *
pycow_private_copy(PyObject *self)
{
	cow_tensor_t *t = T(self), *out = NULL;
	cow_status_t st;
	/* A clone reads every element (so the reshape-alias check sees the
	 * read); a functional tensor's current value comes out plain. */
	if (cow_tensor_is_functional(t))
		PYCOW_LOCKED1(t, false, st = cow_functional_to_plain(t, &out));
	else
		PYCOW_LOCKED1(t, false, st = cow_tensor_clone(t, &out));
	return pycow_check(st) < 0 ? NULL : out;
}

PyObject *
pycow_item(PyObject *self)
{
	int64_t idx[COW_TENSOR_MAX_NDIM] = { 0 };
	if (cow_tensor_numel(T(self)) != 1) {
		PyErr_Format(PyExc_ValueError, "the tensor has %lld elements; "
		    "only a one-element tensor converts to a Python scalar",
		    (long long)cow_tensor_numel(T(self)));
		return NULL;
	}
	cow_tensor_t *snap = pycow_private_copy(self);
	if (snap == NULL)
		return NULL;
	PyObject *v = pycow_element(snap, idx);
	cow_tensor_release(snap);
	return v;
}

static PyObject *
m_item(PyObject *self, PyObject *unused)
{
	(void)unused;
	return pycow_item(self);
}

struct list_builder {
	const cow_tensor_t *t;
	PyObject *flat;
};

static int
append_element(const int64_t *idx, void *arg)
{
	struct list_builder *b = arg;
	PyObject *v = pycow_element(b->t, idx);
	if (v == NULL)
		return -1;
	int rc = PyList_Append(b->flat, v);
	Py_DECREF(v);
	return rc;
}

/* Nest @flat (row-major) by @sizes[dim:], starting at *pos. */
static PyObject *
nest(PyObject *flat, const int64_t *sizes, int ndim, int dim, Py_ssize_t *pos)
{
	if (dim == ndim) {
		PyObject *v = PyList_GET_ITEM(flat, *pos);
		(*pos)++;
		return Py_NewRef(v);
	}
	PyObject *list = PyList_New((Py_ssize_t)sizes[dim]);
	for (Py_ssize_t i = 0; list != NULL && i < sizes[dim]; i++) {
		PyObject *item = nest(flat, sizes, ndim, dim + 1, pos);
		if (item == NULL) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, item);
	}
	return list;
}

static PyObject *
m_tolist(PyObject *self, PyObject *unused)
{
	(void)unused;
	/* Read from a private copy: another thread may write @self. */
	cow_tensor_t *snap = pycow_private_copy(self);
	if (snap == NULL)
		return NULL;
	struct list_builder b = { snap, PyList_New(0) };
	Py_ssize_t pos = 0;
	PyObject *result = NULL;
	if (b.flat != NULL && for_each_index(snap, append_element, &b) == 0)
		result = nest(b.flat, cow_tensor_sizes(snap),
		    cow_tensor_ndim(snap), 0, &pos);
	Py_XDECREF(b.flat);
	cow_tensor_release(snap);
	return result;
}

/* --- repr ---------------------------------------------------------- */

#define REPR_MAX_ELEMENTS 100

static PyObject *
tensor_repr(PyObject *self)
{
	cow_tensor_t *t = T(self);
	const char *dtype = cow_dtype_name(cow_tensor_dtype(t));
	int64_t numel = cow_tensor_numel(t);
	if (numel > REPR_MAX_ELEMENTS || numel == 0) {
		/* No elements: NumPy's "array([], shape=...)"; nested empty
		 * lists could be as many as the other sizes multiply to. */
		PyObject *shape = get_shape(self, NULL);
		if (shape == NULL)
			return NULL;
		PyObject *r = numel == 0 ?
		    PyUnicode_FromFormat("tensor([], shape=%R, dtype=%s)", shape,
		    dtype) :
		    PyUnicode_FromFormat("tensor(shape=%R, dtype=%s)", shape,
		    dtype);
		Py_DECREF(shape);
		return r;
	}
	PyObject *values = m_tolist(self, NULL);
	if (values == NULL)
		return NULL;
	PyObject *r = PyUnicode_FromFormat("tensor(%R, dtype=%s)", values,
	    dtype);
	Py_DECREF(values);
	return r;
}

PyMethodDef pycow_tensor_methods[] = {
	{ "stride", m_stride, METH_NOARGS,
	  "stride($self, /)\n--\n\n"
	  "PyTorch's strides: elements, a tuple" },
	{ "numel", m_numel, METH_NOARGS,
	  "numel($self, /)\n--\n\n"
	  "the number of elements" },
	{ "data_ptr", m_data_ptr, METH_NOARGS,
	  "data_ptr($self, /)\n--\n\n"
	  "the address of element [0, ..., 0], for reading (never materialises)" },
	{ "is_contiguous", m_is_contiguous, METH_NOARGS,
	  "is_contiguous($self, /)\n--\n\n"
	  "row-major and dense" },
	{ "is_pinned", m_is_pinned, METH_NOARGS,
	  "is_pinned($self, /)\n--\n\n"
	  "whether the storage is pinned (its lazy clones are eager copies)" },
	{ "is_read_only", m_is_read_only, METH_NOARGS,
	  "is_read_only($self, /)\n--\n\n"
	  "whether the storage's memory is read-only (its next write copies)" },
	{ "is_functional", m_is_functional, METH_NOARGS,
	  "is_functional($self, /)\n--\n\n"
	  "whether the tensor is functional (cowstore.functional())" },
	{ "shares_storage", m_shares_storage, METH_O,
	  "shares_storage($self, other, /)\n--\n\n"
	  "whether both tensors view one storage (they alias)" },
	{ "shares_data", m_shares_data, METH_O,
	  "shares_data($self, other, /)\n--\n\n"
	  "whether both storages share one allocation now" },
	{ "lazy_clone", m_lazy_clone, METH_NOARGS,
	  "lazy_clone($self, /)\n--\n\n"
	  "an O(1) copy-on-write copy (eager when the storage is pinned)" },
	{ "clone", m_clone, METH_NOARGS,
	  "clone($self, /)\n--\n\n"
	  "an eager contiguous copy" },
	{ "__copy__", m_lazy_clone, METH_NOARGS,
	  "__copy__($self, /)\n--\n\n"
	  "copy.copy(t): a lazy clone, a tensor of its own" },
	{ "__deepcopy__", m_lazy_clone, METH_O,
	  "__deepcopy__($self, memo, /)\n--\n\n"
	  "copy.deepcopy(t): a lazy clone, a tensor of its own" },
	{ "__reduce__", m_reduce, METH_NOARGS,
	  "__reduce__($self, /)\n--\n\n"
	  "pickle: dtype, shape, the values in C order, read-only memory" },
	{ "contiguous", m_contiguous, METH_NOARGS,
	  "contiguous($self, /)\n--\n\n"
	  "self when contiguous, else an eager contiguous copy" },
	{ "reshape", m_reshape, METH_VARARGS,
	  "reshape($self, /, *shape)\n--\n\n"
	  "a view or a lazy copy (the reshape mode), or a copy" },
	{ "view", m_view, METH_VARARGS,
	  "view($self, /, *shape)\n--\n\n"
	  "a view, or ValueError" },
	{ "expand", m_expand, METH_VARARGS,
	  "expand($self, /, *sizes)\n--\n\n"
	  "a broadcast view" },
	{ "transpose", m_transpose, METH_VARARGS,
	  "transpose($self, d0, d1, /)\n--\n\n"
	  "a view" },
	{ "permute", m_permute, METH_VARARGS,
	  "permute($self, /, *dims)\n--\n\n"
	  "a view" },
	{ "unsqueeze", m_unsqueeze, METH_O,
	  "unsqueeze($self, dim, /)\n--\n\n"
	  "a view" },
	{ "squeeze", m_squeeze, METH_VARARGS,
	  "squeeze($self, dim=None, /)\n--\n\n"
	  "a view without size-1 dimensions" },
	{ "item", m_item, METH_NOARGS,
	  "item($self, /)\n--\n\n"
	  "the one element as a Python scalar" },
	{ "tolist", m_tolist, METH_NOARGS,
	  "tolist($self, /)\n--\n\n"
	  "nested lists of Python scalars" },
	{ "numpy", (PyCFunction)(void (*)(void))pycow_tensor_numpy,
	  METH_VARARGS | METH_KEYWORDS,
	  "numpy($self, /, *, read_only=False)\n--\n\n"
	  "a NumPy array over the same memory" },
	{ "__array__", (PyCFunction)(void (*)(void))pycow_tensor_array,
	  METH_VARARGS | METH_KEYWORDS,
	  "__array__($self, /, dtype=None)\n--\n\n"
	  "np.asarray(t); TypeError for bfloat16" },
	{ "__dlpack__", (PyCFunction)(void (*)(void))pycow_tensor_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "__dlpack__($self, /, *, stream=None, max_version=None, "
	  "dl_device=None, copy=None, read_only=False)\n--\n\n"
	  "a DLPack capsule" },
	{ "__dlpack_device__", pycow_tensor_dlpack_device, METH_NOARGS,
	  "__dlpack_device__($self, /)\n--\n\n(1, 0): CPU" },
	{ NULL, NULL, 0, NULL }
};

static PySequenceMethods tensor_sequence = {
	.sq_length = tensor_len,
	.sq_item = pycow_tensor_item,
};

PyTypeObject pycow_tensor_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore.Tensor",
	.tp_basicsize = sizeof(pycow_tensor),
	.tp_dealloc = tensor_dealloc,
	.tp_repr = tensor_repr,
	.tp_as_number = &pycow_number_methods,
	.tp_as_sequence = &tensor_sequence,
	.tp_as_mapping = &pycow_mapping_methods,
	.tp_as_buffer = &pycow_buffer_procs,
	/* Element-wise ==: unhashable, as NumPy's arrays (tp_hash NULL with
	 * tp_richcompare set: __hash__ is None). */
	.tp_richcompare = pycow_richcompare,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A strided tensor over a copy-on-write storage (docs/python.md).",
	.tp_weaklistoffset = offsetof(pycow_tensor, weakrefs),
	.tp_iter = tensor_iter,
	.tp_getset = pycow_tensor_getset,
};


static size_t
count_methods(const PyMethodDef *m)
{
	size_t n = 0;

	while (m[n].ml_name != NULL)
		n++;
	return n;
}

int
pycow_tensor_type_ready(void)
{
	/* The type's methods: pycow_tensor_methods, then ops.c's, in a table
	 * sized by both, which the static type keeps for the life of the
	 * process. */
	if (pycow_tensor_type.tp_methods == NULL) {
		size_t a = count_methods(pycow_tensor_methods);
		size_t b = count_methods(pycow_op_methods);
		PyMethodDef *all = PyMem_RawCalloc(a + b + 1, sizeof *all);
		if (all == NULL) {
			PyErr_NoMemory();
			return -1;
		}
		memcpy(all, pycow_tensor_methods, a * sizeof *all);
		memcpy(all + a, pycow_op_methods, b * sizeof *all);
		pycow_tensor_type.tp_methods = all;
	}
	return PyType_Ready(&pycow_tensor_type);
}

/* --- constructors -------------------------------------------------- */

typedef cow_status_t (*make_fn)(cow_dtype_t, int, const int64_t *,
    cow_allocator_t *, cow_tensor_t **);

static PyObject *
make(PyObject *args, PyObject *kw, const char *fname, make_fn fn)
{
	static char *kwlist[] = { "shape", "dtype", NULL };
	PyObject *shape, *dtype_obj = NULL;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	cow_dtype_t dtype = COW_DTYPE_FLOAT32;
	cow_tensor_t *out = NULL;
	cow_status_t st;
	char fmt[32];

	snprintf(fmt, sizeof fmt, "O|O:%s", fname);
	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &shape, &dtype_obj))
		return NULL;
	int n = pycow_parse_shape(shape, sizes, fname, "shape");
	if (n < 0 || (dtype_obj != NULL && dtype_obj != Py_None &&
	    pycow_dtype_from_object(dtype_obj, &dtype, fname) < 0))
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	st = fn(dtype, n, sizes, NULL, &out);
	Py_END_ALLOW_THREADS
	return view_result(st, &out);
}

static PyObject *
f_zeros(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	return make(args, kw, "zeros", cow_tensor_zeros);
}

static PyObject *
f_empty(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	return make(args, kw, "empty", cow_tensor_empty);
}

static PyObject *
f_full(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "shape", "fill_value", "dtype", NULL };
	PyObject *shape, *value, *dtype_obj = NULL;
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	cow_dtype_t dtype = COW_DTYPE_FLOAT32;
	cow_tensor_t *out = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:full", kwlist, &shape,
	    &value, &dtype_obj))
		return NULL;
	int n = pycow_parse_shape(shape, sizes, "full", "shape");
	if (n < 0 || (dtype_obj != NULL && dtype_obj != Py_None &&
	    pycow_dtype_from_object(dtype_obj, &dtype, "full") < 0))
		return NULL;
	if (pycow_check(cow_tensor_empty(dtype, n, sizes, NULL, &out)) < 0)
		return NULL;
	if (pycow_fill(out, value) < 0) {
		cow_tensor_release(out);
		return NULL;
	}
	return pycow_wrap(out);
}

static PyObject *
f_arange(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "n", "dtype", NULL };
	int64_t n;
	PyObject *n_obj, *dtype_obj = NULL;
	cow_dtype_t dtype = COW_DTYPE_INT64;
	cow_tensor_t *out = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:arange", kwlist, &n_obj,
	    &dtype_obj))
		return NULL;
	if (pycow_int64_arg(n_obj, &n, "arange", "n") < 0 ||
	    (dtype_obj != NULL && dtype_obj != Py_None &&
	    pycow_dtype_from_object(dtype_obj, &dtype, "arange") < 0))
		return NULL;
	return view_result(cow_tensor_arange(dtype, n, NULL, &out), &out);
}

static PyObject *
f_tensor(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "data", "dtype", NULL };
	PyObject *data, *dtype_obj = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:tensor", kwlist, &data,
	    &dtype_obj))
		return NULL;
	/* Nested sequences (and scalars) straight to the dtype: through
	 * asarray's default dtype first, an int beyond int64 could not reach
	 * a float dtype. */
	if (pycow_is_scalar(data) || (!pycow_tensor_check(data) &&
	    !PyObject_CheckBuffer(data) && !PyCapsule_CheckExact(data) &&
	    !PyObject_HasAttrString(data, "__dlpack__")))
		return pycow_tensor_from_sequence(data, dtype_obj);
	/* A Tensor, a DLPack producer or a buffer: an eager copy. */
	PyObject *src = pycow_asarray(data, "tensor: data");
	if (src == NULL)
		return NULL;
	cow_dtype_t dtype = cow_tensor_dtype(T(src));
	cow_tensor_t *out = NULL;
	cow_status_t st;
	if (dtype_obj != Py_None &&
	    pycow_dtype_from_object(dtype_obj, &dtype, "tensor") < 0) {
		Py_DECREF(src);
		return NULL;
	}
	st = cow_tensor_empty(dtype, cow_tensor_ndim(T(src)),
	    cow_tensor_sizes(T(src)), NULL, &out);
	if (st == COW_OK) {
		PYCOW_LOCKED1(T(src), false, st = cow_tensor_copy_(out, T(src)));
		if (st != COW_OK) {
			cow_tensor_release(out);
			out = NULL;
		}
	}
	Py_DECREF(src);
	return view_result(st, &out);
}

static PyObject *
f_asarray(PyObject *mod, PyObject *obj)
{
	(void)mod;
	return pycow_asarray(obj, "asarray: obj");
}

PyMethodDef pycow_create_functions[] = {
	{ "zeros", (PyCFunction)(void (*)(void))f_zeros,
	  METH_VARARGS | METH_KEYWORDS,
	  "zeros(shape, dtype='float32')\n--\n\n"
	  "a new tensor of zeros (dtype None: float32)" },
	{ "empty", (PyCFunction)(void (*)(void))f_empty,
	  METH_VARARGS | METH_KEYWORDS,
	  "empty(shape, dtype='float32')\n--\n\n"
	  "a new tensor, its values unset (dtype None: float32)" },
	{ "full", (PyCFunction)(void (*)(void))f_full,
	  METH_VARARGS | METH_KEYWORDS,
	  "full(shape, fill_value, dtype='float32')\n--\n\n"
	  "a new tensor, every element fill_value (dtype None: float32)" },
	{ "arange", (PyCFunction)(void (*)(void))f_arange,
	  METH_VARARGS | METH_KEYWORDS,
	  "arange(n, dtype='int64')\n--\n\n"
	  "0, 1, ..., n - 1 (dtype None: int64)" },
	{ "tensor", (PyCFunction)(void (*)(void))f_tensor,
	  METH_VARARGS | METH_KEYWORDS,
	  "tensor(data, dtype=None)\n--\n\n"
	  "a new tensor holding a copy of data" },
	{ "_rebuild", f_rebuild, METH_VARARGS,
	  "_rebuild(data, dtype, shape, read_only, /)\n--\n\n"
	  "pickle's reconstructor" },
	{ "asarray", f_asarray, METH_O,
	  "asarray(obj, /)\n--\n\n"
	  "obj as a Tensor, zero copy when it can be" },
	{ "from_buffer", (PyCFunction)(void (*)(void))pycow_from_buffer,
	  METH_VARARGS | METH_KEYWORDS,
	  "from_buffer(obj, dtype=None, shape=None, *, read_only=False)\n--\n\n"
	  "a tensor over a buffer's memory, zero copy" },
	{ "from_dlpack", (PyCFunction)(void (*)(void))pycow_from_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "from_dlpack(obj, *, device=None, copy=None, read_only=False)\n--\n\n"
	  "a tensor over a DLPack producer's memory (an object with "
	  "__dlpack__, or a capsule), zero copy.\n\n"
	  "device: None, 'cpu' or (1, 0) (another raises BufferError).\n"
	  "copy: True gives a tensor of its own (an eager copy of the import); "
	  "None and False never copy.\n"
	  "read_only: the import is read-only memory (its first write "
	  "copies)." },
	{ NULL, NULL, 0, NULL }
};
