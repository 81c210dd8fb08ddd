/*
 * indexing.c - t[key] (views: ints select, slices with positive steps, one
 * Ellipsis, None inserts a dimension; copies: a slice with a negative
 * step, a list of ints) and t[key] = value (a write through that view;
 * refused for keys that copy).
 */
#include <string.h>

#include "pycow.h"

#define T(o) (((pycow_tensor *)(o))->t)

/*
 * A new contiguous tensor: @t with dimension @dim replaced by its elements
 * @idx[0], ..., @idx[n - 1] (in range) in that order, copied one index at
 * a time (views have non-negative strides, so a reversed or gathered
 * dimension is a copy, as NumPy's fancy indexing is).
 */
static cow_status_t
gather(cow_tensor_t *t, int dim, const int64_t *idx, int64_t n,
    cow_tensor_t **out)
{
	int64_t sizes[COW_TENSOR_MAX_NDIM];
	int nd = cow_tensor_ndim(t);
	cow_tensor_t *r = NULL;
	cow_status_t st;

	memcpy(sizes, cow_tensor_sizes(t), (size_t)nd * sizeof *sizes);
	sizes[dim] = n;
	if ((st = cow_tensor_empty(cow_tensor_dtype(t), nd, sizes, NULL,
	    &r)) != COW_OK)
		return st;
	for (int64_t k = 0; k < n && st == COW_OK; k++) {
		cow_tensor_t *d = NULL, *s = NULL;

		if ((st = cow_tensor_select(r, dim, k, &d)) == COW_OK &&
		    (st = cow_tensor_select(t, dim, idx[k], &s)) == COW_OK)
			st = cow_tensor_copy_(d, s);
		if (d != NULL)
			cow_tensor_release(d);
		if (s != NULL)
			cow_tensor_release(s);
	}
	if (st != COW_OK) {
		cow_tensor_release(r);
		return st;
	}
	*out = r;
	return COW_OK;
}

/* The ints of the list @item as indices of a dimension of @size (negative
 * ones count from the end): a PyMem array of *n, or NULL with an
 * exception. */
static int64_t *
index_list(PyObject *item, int64_t size, int64_t *n)
{
	Py_ssize_t len = PyList_GET_SIZE(item);
	int64_t *idx = PyMem_Malloc((size_t)(len > 0 ? len : 1) *
	    sizeof *idx);

	if (idx == NULL) {
		PyErr_NoMemory();
		return NULL;
	}
	for (Py_ssize_t k = 0; k < len; k++) {
		PyObject *v = PyList_GET_ITEM(item, k);
		Py_ssize_t i;

		if (PyBool_Check(v) || !PyIndex_Check(v)) {
			PyErr_Format(PyExc_IndexError, "cowstore: an index "
			    "list holds ints, not %.100s (boolean masks are "
			    "not supported)", Py_TYPE(v)->tp_name);
			goto fail;
		}
		i = PyNumber_AsSsize_t(v, PyExc_IndexError);
		if (i == -1 && PyErr_Occurred())
			goto fail;
		if (i < -size || i >= size) {
			PyErr_Format(PyExc_IndexError, "cowstore: index %zd "
			    "is out of bounds for a dimension of size %lld", i,
			    (long long)size);
			goto fail;
		}
		idx[k] = i < 0 ? i + size : i;
	}
	*n = len;
	return idx;
fail:
	PyMem_Free(idx);
	return NULL;
}

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
		if (*dim >= cow_tensor_ndim(*t)) {
			PyErr_SetString(PyExc_IndexError, "cowstore: too many "
			    "indices for the tensor");
			return -1;
		}
		Py_ssize_t len = PySlice_AdjustIndices(
		    (Py_ssize_t)cow_tensor_sizes(*t)[*dim], &start, &stop, step);
		if (step < 0 && cow_tensor_numel(*t) == 0) {
			/* No elements to reverse: the same indices in
			 * ascending order, a view (as NumPy's, and no loop
			 * over a huge empty dimension). */
			Py_ssize_t last = len > 0 ? start + (len - 1) * step : 0;
			start = last;
			stop = len > 0 ? last + (len - 1) * -step + 1 : 0;
			step = -step;
		}
		if (step > 0 || len == 0) {
			if (step < 0)
				start = stop = 0, step = 1;
			PYCOW_VIEW(*t, st = cow_tensor_slice(*t, *dim, start,
			    stop, step, &out));
		} else {
			/* A negative step: a copy (gather). */
			int64_t *idx = PyMem_Malloc((size_t)len * sizeof *idx);
			if (idx == NULL) {
				PyErr_NoMemory();
				return -1;
			}
			for (Py_ssize_t k = 0; k < len; k++)
				idx[k] = (int64_t)start + (int64_t)k * step;
			PYCOW_LOCKED1(*t, false,
			    st = gather(*t, *dim, idx, len, &out));
			PyMem_Free(idx);
		}
		(*dim)++;
	} else if (PyList_Check(item)) {
		int64_t n, *idx;
		if (*dim >= cow_tensor_ndim(*t)) {
			PyErr_SetString(PyExc_IndexError, "cowstore: too many "
			    "indices for the tensor");
			return -1;
		}
		idx = index_list(item, cow_tensor_sizes(*t)[*dim], &n);
		if (idx == NULL)
			return -1;
		PYCOW_LOCKED1(*t, false, st = gather(*t, *dim, idx, n, &out));
		PyMem_Free(idx);
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
		    "slices, lists of ints, ... or None, not %.100s",
		    Py_TYPE(item)->tp_name);
		return -1;
	}
	if (pycow_check(st) < 0)
		return -1;
	cow_tensor_release(*t);
	*t = out;
	return 0;
}

static bool
is_int_item(PyObject *it)
{
	return !PyList_Check(it) && !PySlice_Check(it) && it != Py_None &&
	    it != Py_Ellipsis && PyIndex_Check(it) && !PyBool_Check(it);
}

/* With one list in @items: are all the ints adjacent to it (one run of
 * ints and the list)? NumPy treats such ints as indices combined with
 * the list, and puts the result's dimension where they are; apart from
 * it, NumPy moves that dimension to the front, which cowstore does not
 * do. */
static bool
ints_next_to_list(PyObject *items)
{
	Py_ssize_t n = PyTuple_GET_SIZE(items), l = 0, lo, hi;

	while (!PyList_Check(PyTuple_GET_ITEM(items, l)))
		l++;
	for (lo = l; lo > 0 && is_int_item(PyTuple_GET_ITEM(items, lo - 1));)
		lo--;
	for (hi = l; hi + 1 < n && is_int_item(PyTuple_GET_ITEM(items, hi + 1));)
		hi++;
	for (Py_ssize_t i = 0; i < n; i++)
		if ((i < lo || i > hi) && is_int_item(PyTuple_GET_ITEM(items, i)))
			return false;
	return true;
}

/* The view t[key] (a copy for a key with a list or a negative step, which
 * @for_write refuses): a new reference, or NULL. */
static cow_tensor_t *
view_of(PyObject *self, PyObject *key, bool for_write)
{
	PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) :
	    PyTuple_Pack(1, key);
	cow_tensor_t *t = T(self);
	int dim = 0, consuming = 0, ellipses = 0, lists = 0, negative_steps = 0;

	if (items == NULL)
		return NULL;
	Py_ssize_t n = PyTuple_GET_SIZE(items);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *it = PyTuple_GET_ITEM(items, i);
		if (it == Py_Ellipsis)
			ellipses++;
		else if (it != Py_None)
			consuming++;
		if (PyList_Check(it))
			lists++;
		if (PySlice_Check(it)) {
			Py_ssize_t b, e, step;
			if (PySlice_Unpack(it, &b, &e, &step) < 0)
				PyErr_Clear();   /* apply_item raises it */
			else if (step < 0)
				negative_steps++;
		}
	}
	if (lists > 1) {
		Py_DECREF(items);
		PyErr_SetString(PyExc_IndexError, "cowstore: one index list "
		    "at most (NumPy would combine several element-wise)");
		return NULL;
	}
	if (lists == 1 && !ints_next_to_list(items)) {
		Py_DECREF(items);
		PyErr_SetString(PyExc_IndexError, "cowstore: an index list "
		    "with ints apart from it (NumPy would move the dimension "
		    "to the front) is not supported");
		return NULL;
	}
	if (for_write && lists + negative_steps > 0) {
		Py_DECREF(items);
		PyErr_SetString(PyExc_IndexError, "cowstore: t[key] = value "
		    "with a negative-step slice or an index list is not "
		    "supported (t[key] is a copy, not a view)");
		return NULL;
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
	cow_tensor_t *t = view_of(self, key, false);
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
	cow_tensor_t *t = view_of(self, key, true);
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
