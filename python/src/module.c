/*
 * module.c - the cowstore extension module: its types, functions,
 * exceptions and constants.
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

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "cowstore",
	.m_doc = module_doc,
	.m_size = -1,
};

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

PyMODINIT_FUNC
PyInit_cowstore(void)
{
	PyObject *m = PyModule_Create(&module_def);
	if (m == NULL)
		return NULL;
	pycow_aliasing_warning = PyErr_NewExceptionWithDoc(
	    "cowstore.AliasingWarning", "A program relies on reshape "
	    "aliasing (reshape mode 'warn').", PyExc_UserWarning, NULL);
	pycow_aliasing_error = PyErr_NewExceptionWithDoc(
	    "cowstore.AliasingError", "An access refused because it relies on "
	    "reshape aliasing (shadow policy 'error').", PyExc_RuntimeError, NULL);
	/* The statuses of files and snapshots (errors.c; docs/python.md,
	 * "Errors"). */
	pycow_safetensor_error = PyErr_NewExceptionWithDoc(
	    "cowstore.SafetensorError", "A file breaks a rule of the "
	    "safetensors format (COW_EFORMAT).", PyExc_ValueError, NULL);
	pycow_cancelled_error = PyErr_NewExceptionWithDoc(
	    "cowstore.CancelledError", "A save was cancelled (COW_ECANCELED).",
	    PyExc_Exception, NULL);
	pycow_released_error = PyErr_NewExceptionWithDoc(
	    "cowstore.ReleasedError", "A snapshot no longer holds that tensor: "
	    "saved or released (COW_ERELEASED).", PyExc_LookupError, NULL);
	if (pycow_aliasing_warning == NULL || pycow_aliasing_error == NULL ||
	    pycow_safetensor_error == NULL || pycow_cancelled_error == NULL ||
	    pycow_released_error == NULL ||
	    PyModule_AddObjectRef(m, "AliasingWarning", pycow_aliasing_warning) < 0 ||
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
	    PyModule_AddStringConstant(m, "__version__", cow_version_string()) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	/* Reshape-alias reports become Python warnings (errors.c). */
	cow_shadow_handler_set(pycow_shadow_handler, NULL);
	return m;
}
