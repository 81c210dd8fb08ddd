/*
 * dlpack.c - DLPack for Python (the array API standard's protocol):
 * Tensor.__dlpack__, Tensor.__dlpack_device__ and cowstore.from_dlpack.
 *
 * Capsules are named "dltensor" (legacy) or "dltensor_versioned"; a
 * consumer renames one it takes to "used_dltensor[_versioned]", and the
 * capsule's destructor calls the deleter only while the name is the unused
 * one. Imported tensors run the producer's deleter with the GIL held,
 * whichever thread drops the last storage over the memory.
 */
#include <string.h>

#include "pycow.h"
#include "interop/dlpack_abi.h"

#define T(o) (((pycow_tensor *)(o))->t)

static const char legacy_name[] = "dltensor";
static const char legacy_used[] = "used_dltensor";
static const char versioned_name[] = "dltensor_versioned";
static const char versioned_used[] = "used_dltensor_versioned";

/* --- export -------------------------------------------------------- */

static void
legacy_capsule_destructor(PyObject *capsule)
{
	if (!PyCapsule_IsValid(capsule, legacy_name))
		return;   /* consumed (renamed): the consumer owns it */
	struct DLManagedTensor *m = PyCapsule_GetPointer(capsule, legacy_name);
	if (m != NULL && m->deleter != NULL)
		m->deleter(m);
}

static void
versioned_capsule_destructor(PyObject *capsule)
{
	if (!PyCapsule_IsValid(capsule, versioned_name))
		return;
	struct DLManagedTensorVersioned *m =
	    PyCapsule_GetPointer(capsule, versioned_name);
	if (m != NULL && m->deleter != NULL)
		m->deleter(m);
}

/* The consumer's highest major version; -1 for None. */
static int
requested_major(PyObject *max_version, long *major)
{
	int overflow;

	*major = -1;
	if (max_version == Py_None)
		return 0;
	if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2 ||
	    !PyLong_Check(PyTuple_GET_ITEM(max_version, 0)) ||
	    !PyLong_Check(PyTuple_GET_ITEM(max_version, 1))) {
		PyErr_Format(PyExc_TypeError, "__dlpack__: max_version is None "
		    "or a (major, minor) tuple of ints, not %R", max_version);
		return -1;
	}
	*major = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(max_version, 0),
	    &overflow);
	if (*major == -1 && PyErr_Occurred())
		return -1;
	if (overflow != 0)      /* beyond any version: the newest we have */
		*major = overflow > 0 ? COW_DLPACK_MAJOR : -1;
	return 0;
}

/* @dev names the CPU: None, (1, 0), or for from_dlpack's device also
 * "cpu" (@names). Errors name @func and @arg, the function and argument
 * the user called: TypeError for another kind of value, BufferError for
 * another device. */
static int
check_device(PyObject *dev, bool names, const char *func, const char *arg)
{
	int o1, o2;
	long type, id;

	if (dev == Py_None)
		return 0;
	if (names && PyUnicode_Check(dev)) {
		if (PyUnicode_CompareWithASCIIString(dev, "cpu") == 0)
			return 0;
		PyErr_Format(PyExc_BufferError, "%s: %s %R is not available: "
		    "cowstore tensors live on the CPU ('cpu', or (1, 0))",
		    func, arg, dev);
		return -1;
	}
	if (!PyTuple_Check(dev) || PyTuple_GET_SIZE(dev) != 2 ||
	    !PyLong_Check(PyTuple_GET_ITEM(dev, 0)) ||
	    !PyLong_Check(PyTuple_GET_ITEM(dev, 1))) {
		PyErr_Format(PyExc_TypeError, "%s: %s is None%s or a "
		    "(device_type, device_id) tuple of ints, not %R", func, arg,
		    names ? ", 'cpu'" : "", dev);
		return -1;
	}
	type = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(dev, 0), &o1);
	id = PyLong_AsLongAndOverflow(PyTuple_GET_ITEM(dev, 1), &o2);
	if (PyErr_Occurred())
		return -1;
	if (o1 != 0 || o2 != 0 || type != COW__DL_CPU || id != 0) {
		PyErr_Format(PyExc_BufferError, "%s: %s %R is not available: "
		    "cowstore tensors live on the CPU, device (1, 0)", func, arg,
		    dev);
		return -1;
	}
	return 0;
}

PyObject *
pycow_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "stream", "max_version", "dl_device", "copy",
	    "read_only", NULL };
	PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None;
	PyObject *copy = Py_None;
	int read_only = 0;
	unsigned flags = 0;
	long major;
	cow_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOOp:__dlpack__", kwlist,
	    &stream, &max_version, &dl_device, &copy, &read_only))
		return NULL;
	if (stream != Py_None) {
		PyErr_SetString(PyExc_BufferError, "__dlpack__: stream must be "
		    "None for CPU tensors (there are no streams on the CPU)");
		return NULL;
	}
	if (requested_major(max_version, &major) < 0 ||
	    check_device(dl_device, false, "__dlpack__", "dl_device") < 0)
		return NULL;
	if (copy != Py_None && !PyBool_Check(copy)) {
		PyErr_SetString(PyExc_TypeError, "__dlpack__: copy is None, "
		    "True or False");
		return NULL;
	}
	if (copy == Py_True)
		flags |= COW_DLPACK_COPY;
	if (read_only)
		flags |= COW_DLPACK_READ_ONLY;
	/* A writable export materialises and pins: a write. */
	bool writable = (flags & (COW_DLPACK_COPY | COW_DLPACK_READ_ONLY)) == 0;
	/* A read-only snapshot is read by its consumer: let the
	 * reshape-alias check see that read on the tensor itself. */
	if (flags == COW_DLPACK_READ_ONLY && cow_tensor_numel(T(self)) > 0) {
		const void *p;
		PYCOW_LOCKED1(T(self), false, p = cow_tensor_const_data(T(self)));
		if (p == NULL && pycow_check(COW_EALIASING) < 0)
			return NULL;
		if (pycow_flush_warnings() < 0)
			return NULL;
	}

	if (major >= 1) {
		struct DLManagedTensorVersioned *m = NULL;
		PYCOW_LOCKED1(T(self), writable,
		    st = cow_tensor_to_dlpack_versioned(T(self), flags, &m));
		if (pycow_check(st) < 0)
			return NULL;
		PyObject *cap = PyCapsule_New(m, versioned_name,
		    versioned_capsule_destructor);
		if (cap == NULL)
			m->deleter(m);
		return cap;
	}
	struct DLManagedTensor *m = NULL;
	PYCOW_LOCKED1(T(self), writable, st = cow_tensor_to_dlpack(T(self), flags, &m));
	if (pycow_check(st) < 0)
		return NULL;
	PyObject *cap = PyCapsule_New(m, legacy_name, legacy_capsule_destructor);
	if (cap == NULL)
		m->deleter(m);
	return cap;
}

PyObject *
pycow_tensor_dlpack_device(PyObject *self, PyObject *unused)
{
	(void)self, (void)unused;
	return Py_BuildValue("(ii)", COW__DL_CPU, 0);
}

/* --- import -------------------------------------------------------- */

/* The producer's deleter and context, kept while ours stand in for them. */
struct producer {
	void *manager_ctx;
	void (*legacy)(struct DLManagedTensor *);
	void (*versioned)(struct DLManagedTensorVersioned *);
	void *managed;
};

static void
call_producer_deleter(void *arg)
{
	struct producer *p = arg;
	if (p->legacy != NULL) {
		struct DLManagedTensor *m = p->managed;
		m->manager_ctx = p->manager_ctx;
		m->deleter = p->legacy;
		m->deleter(m);
	} else {
		struct DLManagedTensorVersioned *m = p->managed;
		m->manager_ctx = p->manager_ctx;
		m->deleter = p->versioned;
		m->deleter(m);
	}
}

static void
legacy_with_gil(struct DLManagedTensor *m)
{
	struct producer *p = m->manager_ctx;
	pycow_with_gil(call_producer_deleter, p);
	PyMem_RawFree(p);
}

static void
versioned_with_gil(struct DLManagedTensorVersioned *m)
{
	struct producer *p = m->manager_ctx;
	pycow_with_gil(call_producer_deleter, p);
	PyMem_RawFree(p);
}

/* Take over a capsule: rename it used, and stand our GIL-taking deleter in
 * for the producer's. Returns the managed tensor, or NULL with an
 * exception (the capsule untouched, or its deleter already called). */
static void *
take_capsule(PyObject *capsule, bool *versioned)
{
	const char *name = PyCapsule_GetName(capsule);
	if (name == NULL && PyErr_Occurred())
		return NULL;
	if (name != NULL && (strcmp(name, legacy_used) == 0 ||
	    strcmp(name, versioned_used) == 0)) {
		PyErr_Format(PyExc_ValueError, "from_dlpack: the capsule was "
		    "already consumed (its name is '%s')", name);
		return NULL;
	}
	if (name == NULL || (strcmp(name, legacy_name) != 0 &&
	    strcmp(name, versioned_name) != 0)) {
		PyErr_Format(PyExc_ValueError, "from_dlpack: not a DLPack capsule "
		    "(name '%s'; expected 'dltensor' or 'dltensor_versioned')",
		    name != NULL ? name : "(null)");
		return NULL;
	}
	*versioned = strcmp(name, versioned_name) == 0;
	void *managed = PyCapsule_GetPointer(capsule, name);
	if (managed == NULL)
		return NULL;
	if (PyCapsule_SetName(capsule, *versioned ? versioned_used : legacy_used) < 0)
		return NULL;
	/* Our own export (issue 36): the library imports it on the storage
	 * it holds and calls its deleter, which needs no GIL, before the
	 * import returns; a stand-in would hide that it is ours. */
	if (*versioned ? cow_dlpack_versioned_is_own(managed) :
	    cow_dlpack_is_own(managed))
		return managed;
	/* Ours now: the producer's deleter is called exactly once, below or
	 * by the library. */
	struct producer *p = PyMem_RawMalloc(sizeof *p);
	if (*versioned) {
		struct DLManagedTensorVersioned *m = managed;
		if (p == NULL) {
			if (m->deleter != NULL)
				m->deleter(m);
			return PyErr_NoMemory();
		}
		*p = (struct producer){ m->manager_ctx, NULL, m->deleter, m };
		m->manager_ctx = p;
		m->deleter = m->deleter != NULL ? versioned_with_gil : NULL;
	} else {
		struct DLManagedTensor *m = managed;
		if (p == NULL) {
			if (m->deleter != NULL)
				m->deleter(m);
			return PyErr_NoMemory();
		}
		*p = (struct producer){ m->manager_ctx, m->deleter, NULL, m };
		m->manager_ctx = p;
		m->deleter = m->deleter != NULL ? legacy_with_gil : NULL;
	}
	if (p->legacy == NULL && p->versioned == NULL) {
		/* No deleter: nothing to stand in for; the context as it was. */
		if (*versioned)
			((struct DLManagedTensorVersioned *)managed)->manager_ctx =
			    p->manager_ctx;
		else
			((struct DLManagedTensor *)managed)->manager_ctx =
			    p->manager_ctx;
		PyMem_RawFree(p);
	}
	return managed;
}

/* A producer's device must be CPU-readable; checked before it exports. */
static int
check_producer_device(PyObject *obj)
{
	PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
	long type;
	if (dev == NULL)
		return -1;
	if (!PyTuple_Check(dev) || PyTuple_GET_SIZE(dev) != 2) {
		Py_DECREF(dev);
		PyErr_SetString(PyExc_TypeError, "from_dlpack: __dlpack_device__ "
		    "must return a (device_type, device_id) tuple");
		return -1;
	}
	type = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
	if (type == -1 && PyErr_Occurred()) {
		Py_DECREF(dev);
		return -1;
	}
	if (type != COW__DL_CPU && type != COW__DL_CUDA_HOST &&
	    type != COW__DL_ROCM_HOST) {
		PyErr_Format(PyExc_BufferError, "from_dlpack: the producer's "
		    "device %R is not CPU-readable memory (cowstore takes "
		    "device type 1, CPU, and pinned host memory, 3 and 11)", dev);
		Py_DECREF(dev);
		return -1;
	}
	Py_DECREF(dev);
	return 0;
}

/* Producer types seen to refuse max_version: asked without it from then
 * on (raising and clearing the TypeError costs more than the export). */
static PyObject *legacy_producers;

/* obj.__dlpack__(max_version=(1, 0)), or obj.__dlpack__() for a producer
 * that predates the keyword (NumPy 1.24, PyTorch 1.13). */
static PyObject *
producer_capsule(PyObject *obj)
{
	PyObject *type = (PyObject *)Py_TYPE(obj);
	PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
	PyObject *cap = NULL;
	if (method == NULL)
		return NULL;
	if (legacy_producers == NULL && (legacy_producers = PySet_New(NULL)) == NULL)
		goto out;
	int legacy = PySet_Contains(legacy_producers, type);
	if (legacy < 0)
		goto out;
	if (legacy) {
		cap = PyObject_CallNoArgs(method);
		goto out;
	}
	PyObject *args = PyTuple_New(0), *kw = Py_BuildValue("{s:(ii)}",
	    "max_version", COW_DLPACK_MAJOR, COW_DLPACK_MINOR);
	if (args != NULL && kw != NULL) {
		cap = PyObject_Call(method, args, kw);
		if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			cap = PyObject_CallNoArgs(method);
			if (cap != NULL && PySet_Add(legacy_producers, type) < 0)
				Py_CLEAR(cap);
		}
	}
	Py_XDECREF(args);
	Py_XDECREF(kw);
out:
	Py_DECREF(method);
	return cap;
}

PyObject *
pycow_from_dlpack(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "obj", "device", "copy", "read_only", NULL };
	PyObject *obj, *capsule, *device = Py_None, *copy = Py_None;
	int read_only = 0;
	bool versioned = false;
	cow_tensor_t *out = NULL;
	cow_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOp:from_dlpack", kwlist,
	    &obj, &device, &copy, &read_only))
		return NULL;
	if (copy != Py_None && !PyBool_Check(copy)) {
		PyErr_SetString(PyExc_TypeError, "from_dlpack: copy is None, "
		    "True or False");
		return NULL;
	}
	if (check_device(device, true, "from_dlpack", "device") < 0)
		return NULL;
	void *managed;
	if (pycow_tensor_check(obj)) {
		/* Our own tensor: its writable export, as its __dlpack__()
		 * would make, without the capsule (its deleter needs no GIL). */
		struct DLManagedTensorVersioned *m = NULL;
		PYCOW_LOCKED1(T(obj), true,
		    st = cow_tensor_to_dlpack_versioned(T(obj), 0, &m));
		if (pycow_check(st) < 0)
			return NULL;
		managed = m;
		versioned = true;
	} else {
		if (PyCapsule_CheckExact(obj)) {
			capsule = Py_NewRef(obj);
		} else if (PyObject_HasAttrString(obj, "__dlpack__")) {
			if (PyObject_HasAttrString(obj, "__dlpack_device__") &&
			    check_producer_device(obj) < 0)
				return NULL;
			capsule = producer_capsule(obj);
			if (capsule == NULL)
				return NULL;
			if (!PyCapsule_CheckExact(capsule)) {
				PyErr_Format(PyExc_TypeError, "from_dlpack: "
				    "__dlpack__ returned %.100s, not a capsule",
				    Py_TYPE(capsule)->tp_name);
				Py_DECREF(capsule);
				return NULL;
			}
		} else {
			PyErr_Format(PyExc_TypeError, "from_dlpack: %.100s is "
			    "neither a DLPack producer (no __dlpack__) nor a "
			    "DLPack capsule", Py_TYPE(obj)->tp_name);
			return NULL;
		}
		managed = take_capsule(capsule, &versioned);
		Py_DECREF(capsule);
		if (managed == NULL)
			return NULL;
	}
	unsigned flags = read_only ? COW_DLPACK_READ_ONLY : 0;
	/* The import copies nothing; on failure it calls the deleter, which
	 * takes the GIL this thread holds (re-entrant). */
	if (versioned)
		st = cow_tensor_from_dlpack_versioned(managed, flags, &out);
	else
		st = cow_tensor_from_dlpack(managed, flags, &out);
	if (pycow_check(st) < 0)
		return NULL;
	if (copy == Py_True) {
		/* The array API's copy=True: a tensor of our own (copy=False
		 * and None never copy: the import aliases). */
		cow_tensor_t *own = NULL;
		PYCOW_LOCKED1(out, false, st = cow_tensor_clone(out, &own));
		cow_tensor_release(out);
		if (pycow_check(st) < 0)
			return NULL;
		out = own;
	}
	return pycow_wrap(out);
}
