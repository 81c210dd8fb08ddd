/*
 * module.c - the extension module cowstore._cowstore (which the package
 * cowstore re-exports, python/cowstore/): its types, functions, exceptions
 * and constants.
 */
#include "pycow.h"

PyDoc_STRVAR(module_doc,
"cowstore: copy-on-write tensor storage, safe under concurrency.\n"
"\n"
"Tensors share bytes lazily (lazy_clone is O(1)); the first write through\n"
"a copy materialises it. DLPack and the buffer protocol exchange tensors\n"
"with NumPy and PyTorch at zero copy. Snapshots save as safetensors files\n"
"in the background (snapshot, save_file), and files load with no copy\n"
"(load_file, safe_open). See docs/python.md.");

static int
add_type(PyObject *m, const char *name, PyTypeObject *type)
{
	if (PyType_Ready(type) < 0)
		return -1;
	return PyModule_AddObjectRef(m, name, (PyObject *)type);
}

static int
add_dtypes(PyObject *m)
{
	PyObject *names = PyTuple_New(COW_DTYPE_COUNT);
	for (int d = 0; names != NULL && d < COW_DTYPE_COUNT; d++) {
		PyObject *n = pycow_dtype_name((cow_dtype_t)d);
		if (n == NULL) {
			Py_CLEAR(names);
			break;
		}
		PyTuple_SET_ITEM(names, d, n);
	}
	if (names == NULL)
		return -1;
	int rc = PyModule_AddObjectRef(m, "dtypes", names);
	Py_DECREF(names);
	return rc;
}

/* The exceptions are created once per process, by the first exec, and
 * kept by pycow_*_error: the code that raises them (errors.c, files.c) runs
 * in methods of static types, which have no way to their module's state,
 * and a static type (Tensor) is one object for every module object anyway.
 * A second exec (the module imported again after `del sys.modules[...]`)
 * adds the same objects. NULL with an exception. */
static PyObject *
new_exception(PyObject **slot, const char *name, const char *doc,
    PyObject *base)
{
	if (*slot == NULL)
		*slot = PyErr_NewExceptionWithDoc(name, doc, base, NULL);
	return *slot;
}

/* Py_mod_exec (PEP 489): fills a module object the import machinery has
 * made from module_def and the spec (cowstore._cowstore, which the package
 * cowstore re-exports: python/cowstore/__init__.py). */
static int
module_exec(PyObject *m)
{
	if (new_exception(&pycow_aliasing_warning, "cowstore.AliasingWarning",
	    "A program relies on reshape aliasing (reshape mode 'warn').",
	    PyExc_UserWarning) == NULL ||
	    new_exception(&pycow_aliasing_error, "cowstore.AliasingError",
	    "An access refused because it relies on reshape aliasing (shadow "
	    "policy 'error').", PyExc_RuntimeError) == NULL ||
	    /* The statuses of files and snapshots (errors.c; docs/python.md,
	     * "Errors"). */
	    new_exception(&pycow_safetensor_error, "cowstore.SafetensorError",
	    "A file breaks a rule of the safetensors format (COW_EFORMAT).",
	    PyExc_ValueError) == NULL ||
	    new_exception(&pycow_cancelled_error, "cowstore.CancelledError",
	    "A save was cancelled (COW_ECANCELED).", PyExc_Exception) == NULL ||
	    new_exception(&pycow_released_error, "cowstore.ReleasedError",
	    "A snapshot no longer holds that tensor: saved or released "
	    "(COW_ERELEASED).", PyExc_LookupError) == NULL)
		return -1;
	if (PyModule_AddObjectRef(m, "AliasingWarning", pycow_aliasing_warning) < 0 ||
	    PyModule_AddObjectRef(m, "AliasingError", pycow_aliasing_error) < 0 ||
	    PyModule_AddObjectRef(m, "SafetensorError", pycow_safetensor_error) < 0 ||
	    PyModule_AddObjectRef(m, "CancelledError", pycow_cancelled_error) < 0 ||
	    PyModule_AddObjectRef(m, "ReleasedError", pycow_released_error) < 0 ||
	    pycow_tensor_type_ready() < 0 ||
	    PyModule_AddObjectRef(m, "Tensor", (PyObject *)&pycow_tensor_type) < 0 ||
	    PyType_Ready(&pycow_writable_view_type) < 0 ||
	    add_type(m, "reshape_mode", &pycow_reshape_mode_type) < 0 ||
	    add_type(m, "functional", &pycow_functional_type) < 0 ||
	    add_type(m, "Snapshot", &pycow_snapshot_type) < 0 ||
	    add_type(m, "SaveJob", &pycow_job_type) < 0 ||
	    add_type(m, "safe_open", &pycow_safe_open_type) < 0 ||
	    PyModule_AddFunctions(m, pycow_file_functions) < 0 ||
	    PyModule_AddFunctions(m, pycow_create_functions) < 0 ||
	    PyModule_AddFunctions(m, pycow_mode_functions) < 0 ||
	    add_dtypes(m) < 0 || pycow_guard_init() < 0 ||
	    PyModule_AddStringConstant(m, "__version__", cow_version_string()) < 0)
		return -1;
	/* Reshape-alias reports become Python warnings (errors.c). */
	cow_shadow_handler_set(pycow_shadow_handler, NULL);
	return 0;
}

/* Filled by PyInit__cowstore: a slot's value is a void *, and ISO C has
 * no conversion from a function pointer to it (-Wpedantic), so the
 * pointer goes through a union, which is not a constant initialiser. */
static PyModuleDef_Slot module_slots[2];

/* Multi-phase initialisation (PEP 489). No per-module state (m_size 0):
 * what the module keeps is process-wide (the static types, the exceptions
 * above, guard.c's stripes and fork handlers). */
static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "cowstore._cowstore",
	.m_doc = module_doc,
	.m_size = 0,
	.m_slots = module_slots,
};

PyMODINIT_FUNC
PyInit__cowstore(void)
{
	union { int (*fn)(PyObject *); void *p; } exec = { .fn = module_exec };

	module_slots[0] = (PyModuleDef_Slot){ Py_mod_exec, exec.p };
	module_slots[1] = (PyModuleDef_Slot){ 0, NULL };
	return PyModuleDef_Init(&module_def);
}
