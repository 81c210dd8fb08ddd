/*
 * pycow.h - the cowstore extension module's internal interface: the Tensor
 * object, the error mapping and the helpers the module's files share.
 *
 * Every call into the library goes through pycow_check(), which turns a
 * status into a Python exception carrying cow_last_error() and raises the
 * reshape-alias warnings the library reported during the call.
 */
#ifndef PYCOW_H
#define PYCOW_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cowstore/cowstore.h>
#include <cowstore/dlpack.h>

/* A Python tensor: one reference on a C tensor. */
typedef struct {
	PyObject_HEAD
	cow_tensor_t *t;
	PyObject *weakrefs;
} pycow_tensor;

extern PyTypeObject pycow_tensor_type;
extern PyObject *pycow_aliasing_warning;  /* cowstore.AliasingWarning */
extern PyObject *pycow_aliasing_error;    /* cowstore.AliasingError */
extern PyObject *pycow_safetensor_error;  /* cowstore.SafetensorError */
extern PyObject *pycow_cancelled_error;   /* cowstore.CancelledError */
extern PyObject *pycow_released_error;    /* cowstore.ReleasedError */

PyMODINIT_FUNC PyInit__cowstore(void);

#define pycow_tensor_check(o) PyObject_TypeCheck((o), &pycow_tensor_type)

/* Wrap @t (its reference moves into the object); NULL and @t released on
 * failure. */
PyObject *pycow_wrap(cow_tensor_t *t);

/* guard.c ------------------------------------------------------------ */
/* The storages an op uses, each for reading or writing (guard.c): a set
 * of the stripes they map to, any number of tensors (a snapshot's take
 * adds every tensor it reads). Take them with the GIL released:
 *	struct pycow_guard g = { 0 };
 *	pycow_guard_add(&g, dst, true); pycow_guard_add(&g, src, false);
 *	Py_BEGIN_ALLOW_THREADS
 *	pycow_guard_lock(&g); st = op(dst, src); pycow_guard_unlock(&g);
 *	Py_END_ALLOW_THREADS
 */
struct pycow_guard {
	uint64_t read;       /* bit i: stripe i, for reading */
	uint64_t write;      /* bit i: stripe i, for writing */
};
void pycow_guard_add(struct pycow_guard *g, const cow_tensor_t *t, bool write);
void pycow_guard_lock(struct pycow_guard *g);
void pycow_guard_unlock(struct pycow_guard *g);
/* Registers the fork handlers (os.register_at_fork) that keep the stripes
 * usable in a forked child; once per process. -1 with an exception. */
int pycow_guard_init(void);
/* Run @stmt with the GIL released and @g's stripes held. */
#define PYCOW_LOCKED(g, stmt) do {					\
	Py_BEGIN_ALLOW_THREADS						\
	pycow_guard_lock(g);						\
	stmt;								\
	pycow_guard_unlock(g);						\
	Py_END_ALLOW_THREADS						\
} while (0)
/* One tensor for reading (write false) or writing. */
#define PYCOW_LOCKED1(t, write, stmt) do {				\
	struct pycow_guard g_ = { 0 };					\
	pycow_guard_add(&g_, (t), (write));				\
	PYCOW_LOCKED(&g_, stmt);					\
} while (0)
/* A view op: only a functional tensor's views touch shared state. */
#define PYCOW_VIEW(t, stmt) do {					\
	if (cow_tensor_is_functional(t))				\
		PYCOW_LOCKED1((t), false, stmt);			\
	else								\
		stmt;							\
} while (0)

/* errors.c ----------------------------------------------------------- */
/* 0 for COW_OK; otherwise sets the exception for @status and returns -1.
 * Either way, raises the reshape-alias warnings recorded on this thread
 * (a warning turned into an error by a filter also returns -1). */
int pycow_check(cow_status_t status);
/* Raise the pending reshape-alias warnings; -1 if one became an error. */
int pycow_flush_warnings(void);
/* The library's reshape-alias handler (records; calls no Python). */
void pycow_shadow_handler(const cow_shadow_event_t *event, void *ctx);

/* convert.c ---------------------------------------------------------- */
/* A dtype from a name ("float32"), a NumPy dtype or a type with a
 * .dtype/name; -1 with TypeError set when unknown (the message names
 * @func, the function the user called). */
int pycow_dtype_from_object(PyObject *obj, cow_dtype_t *out, const char *func);
PyObject *pycow_dtype_name(cow_dtype_t dtype);
/* The PEP 3118 format of @dtype, NULL for bfloat16. */
const char *pycow_dtype_format(cow_dtype_t dtype);
/* A dtype from a PEP 3118 format and item size; -1 with an exception. */
int pycow_dtype_from_format(const char *format, Py_ssize_t itemsize,
    cow_dtype_t *out);
/* An int argument (anything with __index__) as int64: 0, or -1 with
 * TypeError or OverflowError naming @func and @arg. */
int pycow_int64_arg(PyObject *obj, int64_t *out, const char *func,
    const char *arg);
/* A dimension argument (an int within +-(COW_TENSOR_MAX_NDIM + 1); the
 * library checks it against the tensor): 0, or -1 with an exception naming
 * @func and @arg. */
int pycow_dim_arg(PyObject *obj, int *out, const char *func, const char *arg);
/* A shape from an int or a sequence of ints (or the varargs of a method:
 * (2, 3) or ((2, 3),)); returns ndim or -1 with an exception naming
 * @func and its argument @arg. Each entry fits int64; the library checks
 * the rest. */
int pycow_parse_shape(PyObject *args, int64_t *sizes, const char *func,
    const char *arg);
/* The library's shape check (cow__shape_check: sizes >= 0, the element
 * count and its bytes within COW_STORAGE_MAX_NBYTES), with the C API's
 * errors as exceptions: 0, or -1 with an exception. */
int pycow_shape_check(int ndim, const int64_t *sizes, size_t itemsize,
    int64_t *numel, const char *func);
/* NumPy's strides of @t (bytes), each product checked: a stride no element
 * applies (a tensor with no elements, a dimension of size 1) may exceed
 * int64 in bytes and is then INT64_MAX, as the library saturates element
 * strides. 0, or -1 with OverflowError. */
int pycow_byte_strides(const cow_tensor_t *t, int64_t *out, const char *func);
/* A tuple of @n int64 values. */
PyObject *pycow_int64_tuple(const int64_t *v, int n);
/* Python scalar of element @index (ndim entries) of @t. */
PyObject *pycow_element(const cow_tensor_t *t, const int64_t *index);
/* Python scalar (bool, int, float, complex) -> true when it is one. */
int pycow_is_scalar(PyObject *obj);
/* Write Python scalar @value into every element of @t (a fill). */
int pycow_fill(cow_tensor_t *t, PyObject *value);
/* A 0-d tensor of @dtype holding @value converted (ops.h's rules). */
int pycow_scalar_like(PyObject *value, cow_dtype_t dtype, cow_tensor_t **out);
/* A lazy clone that first reads @t, as a snapshot's consumer will (the
 * reshape-alias check reports or refuses the read on @t itself). Call it
 * with @t's stripe held. */
cow_status_t pycow_read_then_lazy_clone(cow_tensor_t *t, cow_tensor_t **out);
/* A new tensor holding a copy of @data (nested sequences of scalars). */
PyObject *pycow_tensor_from_sequence(PyObject *data, PyObject *dtype);

/* buffer.c ----------------------------------------------------------- */
extern PyBufferProcs pycow_buffer_procs;
extern PyTypeObject pycow_writable_view_type;
PyObject *pycow_from_buffer(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pycow_tensor_numpy(PyObject *self, PyObject *args, PyObject *kw);
/* Tensor.__array__(dtype=None): TypeError for bfloat16 (NumPy has none). */
PyObject *pycow_tensor_array(PyObject *self, PyObject *args, PyObject *kw);
/* Run @fn(data) with the GIL, unless the interpreter is finalizing. */
void pycow_with_gil(void (*fn)(void *), void *data);

/* dlpack.c ----------------------------------------------------------- */
PyObject *pycow_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pycow_tensor_dlpack_device(PyObject *self, PyObject *unused);
PyObject *pycow_from_dlpack(PyObject *self, PyObject *args, PyObject *kw);

/* ops.c -------------------------------------------------------------- */
extern PyNumberMethods pycow_number_methods;
/* A tensor from @obj: a Tensor (new reference), else asarray(@obj). An
 * error names @what, the function and argument the user called
 * ("copy_: src"). */
PyObject *pycow_asarray(PyObject *obj, const char *what);

/* tp_richcompare: element-wise comparisons into bool tensors (ops.c). */
PyObject *pycow_richcompare(PyObject *self, PyObject *other, int cmp);

/* indexing.c --------------------------------------------------------- */
extern PyMappingMethods pycow_mapping_methods;
PyObject *pycow_tensor_item(PyObject *self, Py_ssize_t i);

/* files.c ------------------------------------------------------------ */
extern PyTypeObject pycow_snapshot_type;   /* cowstore.Snapshot */
extern PyTypeObject pycow_job_type;        /* cowstore.SaveJob */
extern PyTypeObject pycow_safe_open_type;  /* cowstore.safe_open */
/* save_file, load_file, snapshot. */
extern PyMethodDef pycow_file_functions[];

/* modes.c ------------------------------------------------------------ */
/* A uint64_t counter of a stats struct: its name (the field's) and offset;
 * a table of them ends with { NULL, 0 }. */
struct pycow_counter {
	const char *name;
	size_t offset;
};
#define PYCOW_COUNTER(type, field) { #field, offsetof(type, field) }
/* A dict of @stats' counters in @c; NULL with an exception. */
PyObject *pycow_counters(const void *stats, const struct pycow_counter *c);

extern PyTypeObject pycow_reshape_mode_type;
extern PyTypeObject pycow_functional_type;
extern PyMethodDef pycow_mode_functions[];

/* tensor.c: a private copy of @self's current values (plain), safe to read
 * element by element while other threads write @self. */
cow_tensor_t *pycow_private_copy(PyObject *self);
/* The one element of @self as a Python scalar. */
PyObject *pycow_item(PyObject *self);

/* tensor.c: methods the module functions reuse ------------------------ */
extern PyMethodDef pycow_tensor_methods[];
extern PyGetSetDef pycow_tensor_getset[];
extern PyMethodDef pycow_create_functions[];
extern PyMethodDef pycow_op_methods[];
int pycow_tensor_type_ready(void);

#endif
