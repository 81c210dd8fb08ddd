/*
 * buffer.c - the buffer protocol both ways, and NumPy views.
 *
 * Exporting (Tensor as a buffer): a read-only request gets an O(1)
 * snapshot (a lazy clone the buffer holds); a writable request materialises
 * the tensor and pins its storage until the buffer is released.
 * Importing (from_buffer): any buffer, zero copy; read-only buffers become
 * read-only memory (every write copies), writable ones are aliased and
 * pinned for life. The buffer is released, with the GIL, when the last
 * storage over it goes.
 */
#include <string.h>

#include "core/fault.h"
#include "pycow.h"

#define T(o) (((pycow_tensor *)(o))->t)

void
pycow_with_gil(void (*fn)(void *), void *data)
{
	/* At exit the interpreter may be gone: leak rather than crash. */
#if PY_VERSION_HEX >= 0x030D0000
	if (!Py_IsInitialized() || Py_IsFinalizing())
		return;
#else
	if (!Py_IsInitialized() || _Py_IsFinalizing())
		return;
#endif
	PyGILState_STATE g = PyGILState_Ensure();
	fn(data);
	PyGILState_Release(g);
}

/* --- export -------------------------------------------------------- */

/* What a buffer we gave out holds until it is released. */
struct export {
	cow_tensor_t *snapshot;   /* read-only: the lazy clone; else NULL */
	bool pinned;              /* writable: the tensor's storage is pinned */
	Py_ssize_t shape[COW_TENSOR_MAX_NDIM];
	Py_ssize_t strides[COW_TENSOR_MAX_NDIM];
};

static char empty_data[16];   /* the address of a buffer of no bytes */

/* A library error as a BufferError (the buffer protocol's exception),
 * except for MemoryError. */
static int
buffer_error(cow_status_t st)
{
	if (pycow_check(st) == 0)
		return 0;
	if (!PyErr_ExceptionMatches(PyExc_MemoryError)) {
		PyObject *type, *value, *tb;
		PyErr_Fetch(&type, &value, &tb);
		PyErr_Format(PyExc_BufferError, "%S", value);
		Py_XDECREF(type);
		Py_XDECREF(value);
		Py_XDECREF(tb);
	}
	return -1;
}

/* Column-major and dense (dimensions of size 1 ignored), as a transposed
 * row-major matrix is. */
static bool
is_fortran_contiguous(const cow_tensor_t *t)
{
	const int64_t *sizes = cow_tensor_sizes(t), *strides = cow_tensor_strides(t);
	int64_t expected = 1;
	if (cow_tensor_numel(t) == 0)
		return true;
	for (int i = 0; i < cow_tensor_ndim(t); i++) {
		if (sizes[i] == 1)
			continue;
		if (strides[i] != expected)
			return false;
		expected *= sizes[i];
	}
	return true;
}

static int
tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	cow_tensor_t *t = T(self);
	cow_dtype_t dtype = cow_tensor_dtype(t);
	int ndim = cow_tensor_ndim(t);
	Py_ssize_t item = (Py_ssize_t)cow_dtype_size(dtype);
	bool contiguous = cow_tensor_is_contiguous(t);
	bool writable = (flags & PyBUF_WRITABLE) != 0;
	const char *format = pycow_dtype_format(dtype);
	void *data = NULL;
	cow_status_t st;

	bool want_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS;
	bool want_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS;
	bool want_any = (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS;
	bool strided = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
	bool fortran = want_f || want_any ? is_fortran_contiguous(t) : false;
	if ((!strided && !contiguous) || (want_c && !contiguous) ||
	    (want_f && !fortran) || (want_any && !contiguous && !fortran)) {
		PyErr_Format(PyExc_BufferError, "cowstore: the tensor is not "
		    "%s-contiguous; ask for a strided buffer or call "
		    "contiguous()", want_f ? "Fortran" : "C");
		return -1;
	}
	if ((flags & PyBUF_FORMAT) && format == NULL) {
		PyErr_Format(PyExc_BufferError, "cowstore: %s has no buffer "
		    "format (PEP 3118); ask for bytes without a format",
		    cow_dtype_name(dtype));
		return -1;
	}
	struct export *ex = PyMem_Calloc(1, sizeof *ex);
	if (ex == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	if (writable) {
		/* Materialise and pin: no lazy clone shares what the consumer
		 * writes. Unpinned in tensor_releasebuffer. */
		PYCOW_LOCKED1(t, true, st = COW__FAULT_POINT(buffer_pin,
		    cow_tensor_pin(t, &data)));
		ex->pinned = COW__FAULT_POINT(buffer_pinned, st == COW_OK);
	} else {
		/* A read of @t (the reshape-alias check sees it), then the
		 * snapshot the buffer holds. */
		PYCOW_LOCKED1(t, false, st = pycow_read_then_lazy_clone(t,
		    &ex->snapshot));
		if (st == COW_OK) {
			data = (void *)cow_tensor_const_data(ex->snapshot);
			if (data == NULL && cow_tensor_numel(t) > 0)
				st = COW_EALIASING;
		}
	}
	int64_t bytes[COW_TENSOR_MAX_NDIM];
	if (buffer_error(st) < 0 ||
	    pycow_byte_strides(t, bytes, "Tensor buffer") < 0) {
		if (ex->pinned && cow_tensor_unpin(t) != COW_OK)
			PyErr_WriteUnraisable(self);   /* cannot: we pinned */
		cow_tensor_release(ex->snapshot);
		PyMem_Free(ex);
		return -1;
	}
	for (int i = 0; i < ndim; i++) {
		ex->shape[i] = (Py_ssize_t)cow_tensor_sizes(t)[i];
		ex->strides[i] = (Py_ssize_t)bytes[i];
	}
	view->buf = data != NULL ? data : empty_data;
	view->obj = Py_NewRef(self);
	view->len = (Py_ssize_t)cow_tensor_numel(t) * item;
	view->readonly = !writable;
	view->itemsize = item;
	view->format = (flags & PyBUF_FORMAT) ? (char *)format : NULL;
	view->ndim = ndim;
	view->shape = (flags & PyBUF_ND) == PyBUF_ND ? ex->shape : NULL;
	view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? ex->strides : NULL;
	view->suboffsets = NULL;
	view->internal = ex;
	if (view->shape == NULL)
		view->ndim = 1;
	return 0;
}

static void
tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
	struct export *ex = view->internal;
	cow_tensor_release(ex->snapshot);
	if (ex->pinned && cow_tensor_unpin(T(self)) != COW_OK)
		PyErr_WriteUnraisable(self);   /* cannot happen: we pinned */
	PyMem_Free(ex);
}

PyBufferProcs pycow_buffer_procs = {
	.bf_getbuffer = tensor_getbuffer,
	.bf_releasebuffer = tensor_releasebuffer,
};

/* --- numpy() ------------------------------------------------------- */

/* Forwards a buffer request to its tensor as a writable one, so that
 * NumPy (which asks for read-only buffers) gets a writable, pinned view. */
typedef struct {
	PyObject_HEAD
	PyObject *tensor;
} writable_view;

static int
writable_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
	return PyObject_GetBuffer(((writable_view *)self)->tensor, view,
	    flags | PyBUF_WRITABLE);
}

static void
writable_dealloc(PyObject *self)
{
	Py_XDECREF(((writable_view *)self)->tensor);
	PyObject_Free(self);
}

static PyBufferProcs writable_procs = { .bf_getbuffer = writable_getbuffer };

PyTypeObject pycow_writable_view_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore._WritableView",
	.tp_basicsize = sizeof(writable_view),
	.tp_dealloc = writable_dealloc,
	.tp_as_buffer = &writable_procs,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A tensor's buffer, always writable (Tensor.numpy()).",
};

PyObject *
pycow_tensor_numpy(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "read_only", NULL };
	int read_only = 0;
	PyObject *source, *np, *arr = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p:numpy", kwlist, &read_only))
		return NULL;
	if (read_only) {
		source = Py_NewRef(self);
	} else {
		writable_view *w = PyObject_New(writable_view,
		    &pycow_writable_view_type);
		if (w == NULL)
			return NULL;
		w->tensor = Py_NewRef(self);
		source = (PyObject *)w;
	}
	/* The buffer first, through a memoryview: NumPy would turn an object
	 * whose buffer fails into an object array instead of raising. */
	PyObject *mv = PyMemoryView_FromObject(source);
	Py_DECREF(source);
	if (mv == NULL)
		return NULL;
	np = PyImport_ImportModule("numpy");
	if (np != NULL)
		arr = PyObject_CallMethod(np, "asarray", "O", mv);
	Py_XDECREF(np);
	Py_DECREF(mv);
	return arr;
}

/* --- __array__ ----------------------------------------------------- */

/* NumPy's last resort before nested sequences: np.asarray() tries the
 * buffer protocol first and ignores its errors, so it reaches __array__
 * only when the buffer failed. bfloat16 always does (PEP 3118 has no
 * format for it), and without __array__ NumPy made an object array of 0-d
 * tensors; this raises TypeError instead, as NumPy does for a dtype it does
 * not know ("data type 'bfloat16' not understood") and PyTorch's
 * Tensor.numpy() does for bfloat16. For any other dtype the buffer request
 * is made again, so its error (a BufferError, MemoryError) is what NumPy
 * raises, or, called directly, the result is np.asarray(t)'s. */
PyObject *
pycow_tensor_array(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "dtype", NULL };
	PyObject *dtype = Py_None, *mv, *np, *arr = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:__array__", kwlist,
	    &dtype))
		return NULL;
	if (cow_tensor_dtype(T(self)) == COW_DTYPE_BFLOAT16) {
		PyErr_SetString(PyExc_TypeError, "cowstore: NumPy has no "
		    "bfloat16; convert first, cowstore.tensor(t, "
		    "dtype=\"float32\") (an exact float32 copy), or use "
		    "torch.from_dlpack(t) (zero copy)");
		return NULL;
	}
	mv = PyMemoryView_FromObject(self);
	if (mv == NULL)
		return NULL;
	np = PyImport_ImportModule("numpy");
	if (np != NULL)
		arr = PyObject_CallMethod(np, "asarray", "OO", mv, dtype);
	Py_XDECREF(np);
	Py_DECREF(mv);
	return arr;
}

/* --- from_buffer --------------------------------------------------- */

static void
release_buffer(void *arg)
{
	PyBuffer_Release(arg);
}

static void
buffer_deleter(void *data, size_t nbytes, void *ctx)
{
	(void)data, (void)nbytes;
	pycow_with_gil(release_buffer, ctx);
	PyMem_RawFree(ctx);
}

PyObject *
pycow_from_buffer(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "obj", "dtype", "shape", "read_only", NULL };
	PyObject *obj, *dtype_obj = Py_None, *shape_obj = Py_None;
	int read_only = 0;
	int64_t sizes[COW_TENSOR_MAX_NDIM], strides[COW_TENSOR_MAX_NDIM];
	int ndim;
	bool have_strides = true;
	cow_dtype_t dtype;
	cow_tensor_t *out = NULL;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO$p:from_buffer", kwlist,
	    &obj, &dtype_obj, &shape_obj, &read_only))
		return NULL;
	Py_buffer *view = PyMem_RawMalloc(sizeof *view);
	if (view == NULL)
		return PyErr_NoMemory();
	if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO) < 0) {
		PyMem_RawFree(view);
		return NULL;
	}
	if (view->ndim > COW_TENSOR_MAX_NDIM) {
		PyErr_Format(PyExc_ValueError, "from_buffer: %d dimensions; at "
		    "most %d", view->ndim, COW_TENSOR_MAX_NDIM);
		goto fail;
	}
	if (dtype_obj == Py_None && shape_obj == Py_None) {
		/* The buffer's own layout. */
		if (pycow_dtype_from_format(view->format, view->itemsize, &dtype) < 0)
			goto fail;
		ndim = view->ndim;
		for (int i = 0; i < ndim; i++) {
			sizes[i] = view->shape[i];
			if (view->strides[i] < 0 || view->strides[i] % view->itemsize) {
				PyErr_Format(PyExc_ValueError, "from_buffer: stride "
				    "%zd of dimension %d is negative or not a "
				    "multiple of the item size %zd",
				    view->strides[i], i, view->itemsize);
				goto fail;
			}
			strides[i] = view->strides[i] / view->itemsize;
		}
	} else {
		/* Reinterpret a contiguous buffer's bytes. */
		if (!PyBuffer_IsContiguous(view, 'C')) {
			PyErr_SetString(PyExc_ValueError, "from_buffer: dtype and "
			    "shape reinterpret a contiguous buffer only");
			goto fail;
		}
		if (dtype_obj == Py_None) {
			if (pycow_dtype_from_format(view->format, view->itemsize,
			    &dtype) < 0)
				goto fail;
		} else if (pycow_dtype_from_object(dtype_obj, &dtype,
		    "from_buffer") < 0) {
			goto fail;
		}
		Py_ssize_t item = (Py_ssize_t)cow_dtype_size(dtype);
		if (shape_obj == Py_None) {
			if (view->len % item != 0) {
				PyErr_Format(PyExc_ValueError, "from_buffer: %zd "
				    "bytes is not a whole number of %s elements",
				    view->len, cow_dtype_name(dtype));
				goto fail;
			}
			ndim = 1;
			sizes[0] = view->len / item;
		} else {
			int64_t numel;
			ndim = pycow_parse_shape(shape_obj, sizes, "from_buffer",
			    "shape");
			/* The C API's checks and errors: no product here
			 * can overflow after them. */
			if (ndim < 0 || pycow_shape_check(ndim, sizes,
			    (size_t)item, &numel, "from_buffer") < 0)
				goto fail;
			if (numel * item != view->len) {
				PyErr_Format(PyExc_ValueError, "from_buffer: shape "
				    "%R of %s needs %lld bytes; the buffer has %zd",
				    shape_obj, cow_dtype_name(dtype),
				    (long long)(numel * item), view->len);
				goto fail;
			}
		}
		have_strides = false;   /* contiguous: the library's strides */
	}
	unsigned flags = view->readonly || read_only ? COW_STORAGE_READ_ONLY :
	    COW_STORAGE_NOT_SHAREABLE;
	cow_status_t st = cow_tensor_from_external(view->buf, dtype, ndim, sizes,
	    have_strides ? strides : NULL, 0, buffer_deleter, view, flags,
	    NULL, &out);
	if (pycow_check(st) < 0)
		goto fail;   /* nothing was taken */
	return pycow_wrap(out);
fail:
	PyBuffer_Release(view);
	PyMem_RawFree(view);
	return NULL;
}
