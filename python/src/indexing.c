/*
 * indexing.c - t[key] (views: ints select, slices with positive steps, one
 * Ellipsis, None inserts a dimension) and t[key] = value (a write through
 * that view).
 */
#include "pycow.h"

#define T(o) (((pycow_tensor *)(o))->t)

/* Apply one index item at dimension *dim of *t (replaced by the view). */
static int
apply_item(cow_tensor_t **t, PyObject *item, int *dim)
{
	cow_tensor_t *out = NULL;
	cow_status_t st;

	if (item == Py_None) {
		PYCOW_VIEW(*t, st = cow_tensor_unsqueeze(*t, *dim, &out));
		(*dim)++;
	} else if (PySlice_Check(item)) {
		Py_ssize_t start, stop, step;
		if (PySlice_Unpack(item, &start, &stop, &step) < 0)
			return -1;
		if (step <= 0) {
			PyErr_SetString(PyExc_ValueError, "cowstore: slice steps "
			    "must be positive (views have non-negative strides)");
			return -1;
		}
		if (*dim >= cow_tensor_ndim(*t)) {
			PyErr_SetString(PyExc_IndexError, "cowstore: too many "
			    "indices for the tensor");
			return -1;
		}
		PySlice_AdjustIndices((Py_ssize_t)cow_tensor_sizes(*t)[*dim],
		    &start, &stop, step);
		PYCOW_VIEW(*t, st = cow_tensor_slice(*t, *dim, start, stop, step, &out));
		(*dim)++;
	} else if (PyIndex_Check(item) && !PyBool_Check(item)) {
		Py_ssize_t i = PyNumber_AsSsize_t(item, PyExc_IndexError);
		if (i == -1 && PyErr_Occurred())
			return -1;
		if (*dim >= cow_tensor_ndim(*t)) {
			PyErr_SetString(PyExc_IndexError, "cowstore: too many "
			    "indices for the tensor");
			return -1;
		}
		PYCOW_VIEW(*t, st = cow_tensor_select(*t, *dim, i, &out));
	} else {
		PyErr_Format(PyExc_TypeError, "cowstore: indices are ints, "
		    "slices, ... or None, not %.100s", Py_TYPE(item)->tp_name);
		return -1;
	}
	if (pycow_check(st) < 0)
		return -1;
	cow_tensor_release(*t);
	*t = out;
	return 0;
}

/* The view t[key]: a new reference, or NULL. */
static cow_tensor_t *
view_of(PyObject *self, PyObject *key)
{
	PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) :
	    PyTuple_Pack(1, key);
	cow_tensor_t *t = T(self);
	int dim = 0, consuming = 0, ellipses = 0;

	if (items == NULL)
		return NULL;
	Py_ssize_t n = PyTuple_GET_SIZE(items);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *it = PyTuple_GET_ITEM(items, i);
		if (it == Py_Ellipsis)
			ellipses++;
		else if (it != Py_None)
			consuming++;
	}
	if (ellipses > 1) {
		Py_DECREF(items);
		PyErr_SetString(PyExc_IndexError, "cowstore: an index can only "
		    "have a single ellipsis ('...')");
		return NULL;
	}
	if (consuming > cow_tensor_ndim(t)) {
		Py_DECREF(items);
		PyErr_Format(PyExc_IndexError, "cowstore: too many indices: %d "
		    "for a tensor of %d dimensions", consuming,
		    cow_tensor_ndim(t));
		return NULL;
	}
	cow_tensor_retain(t);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *it = PyTuple_GET_ITEM(items, i);
		if (it == Py_Ellipsis) {
			dim += cow_tensor_ndim(T(self)) - consuming;
			continue;
		}
		if (apply_item(&t, it, &dim) < 0) {
			cow_tensor_release(t);
			Py_DECREF(items);
			return NULL;
		}
	}
	Py_DECREF(items);
	return t;
}

static PyObject *
tensor_getitem(PyObject *self, PyObject *key)
{
	cow_tensor_t *t = view_of(self, key);
	return t != NULL ? pycow_wrap(t) : NULL;
}

static int
tensor_setitem(PyObject *self, PyObject *key, PyObject *value)
{
	if (value == NULL) {
		PyErr_SetString(PyExc_TypeError, "cowstore: tensor elements "
		    "cannot be deleted");
		return -1;
	}
	cow_tensor_t *t = view_of(self, key);
	int rc;
	if (t == NULL)
		return -1;
	if (pycow_is_scalar(value)) {
		rc = pycow_fill(t, value);
	} else {
		PyObject *src = pycow_asarray(value, "__setitem__: value");
		cow_status_t st = COW_OK;
		if (src != NULL) {
			struct pycow_guard g = { 0 };
			pycow_guard_add(&g, t, true);
			pycow_guard_add(&g, T(src), false);
			PYCOW_LOCKED(&g, st = cow_tensor_copy_(t, T(src)));
		}
		rc = src == NULL ? -1 : pycow_check(st);
		Py_XDECREF(src);
	}
	cow_tensor_release(t);
	return rc;
}

PyMappingMethods pycow_mapping_methods = {
	.mp_subscript = tensor_getitem,
	.mp_ass_subscript = tensor_setitem,
};

/* t[i] for the sequence protocol (iteration). */
PyObject *
pycow_tensor_item(PyObject *self, Py_ssize_t i)
{
	cow_tensor_t *out = NULL;
	cow_status_t st;
	PYCOW_VIEW(T(self), st = cow_tensor_select(T(self), 0, i, &out));
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(out);
}
