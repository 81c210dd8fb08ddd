/*
 * modes.c - the library's process-wide and per-thread settings in Python
 * style: statistics, the allocator's budget and retention, the reshape
 * mode and shadow policy, and two context managers (reshape_mode,
 * functional).
 */
#include <string.h>

#include "pycow.h"

/* --- names <-> enums ------------------------------------------------ */

struct name { const char *name; int value; };

static const struct name reshape_modes[] = {
	{ "alias", COW_RESHAPE_ALIAS }, { "lazy_copy", COW_RESHAPE_LAZY_COPY },
	{ "warn", COW_RESHAPE_WARN }, { NULL, 0 }
};

static const struct name shadow_policies[] = {
	{ "warn_once", COW_SHADOW_WARN_ONCE },
	{ "warn_always", COW_SHADOW_WARN_ALWAYS },
	{ "error", COW_SHADOW_ERROR }, { NULL, 0 }
};

static int
lookup(const struct name *names, PyObject *obj, const char *what, int *out)
{
	const char *s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
	for (const struct name *n = names; s != NULL && n->name != NULL; n++) {
		if (strcmp(s, n->name) == 0) {
			*out = n->value;
			return 0;
		}
	}
	if (!PyErr_Occurred())
		PyErr_Format(PyExc_ValueError, "cowstore: unknown %s %R", what, obj);
	return -1;
}

static PyObject *
name_of(const struct name *names, int value)
{
	for (const struct name *n = names; n->name != NULL; n++)
		if (n->value == value)
			return PyUnicode_FromString(n->name);
	Py_RETURN_NONE;
}

/* --- statistics and the allocator ----------------------------------- */

static int
put(PyObject *dict, const char *key, unsigned long long v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc = o == NULL ? -1 : PyDict_SetItemString(dict, key, o);
	Py_XDECREF(o);
	return rc;
}

PyObject *
pycow_counters(const void *stats, const struct pycow_counter *c)
{
	PyObject *d = PyDict_New();

	for (; d != NULL && c->name != NULL; c++) {
		uint64_t v;
		memcpy(&v, (const char *)stats + c->offset, sizeof v);
		if (put(d, c->name, v) < 0)
			Py_CLEAR(d);
	}
	return d;
}

static const struct pycow_counter stats_counters[] = {
	PYCOW_COUNTER(cow_stats_t, lazy_clones),
	PYCOW_COUNTER(cow_stats_t, ctx_wraps),
	PYCOW_COUNTER(cow_stats_t, eager_fallbacks),
	PYCOW_COUNTER(cow_stats_t, materialize_copies),
	PYCOW_COUNTER(cow_stats_t, materialize_steals),
	PYCOW_COUNTER(cow_stats_t, bytes_copied),
	PYCOW_COUNTER(cow_stats_t, external_copies),
	PYCOW_COUNTER(cow_stats_t, pinned_clones),
	PYCOW_COUNTER(cow_stats_t, snapshot_copies),
	PYCOW_COUNTER(cow_stats_t, snapshot_persists),
	{ NULL, 0 }
};

static PyObject *
f_stats(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	cow_stats_t s;
	cow_stats_get(&s);
	return pycow_counters(&s, stats_counters);
}

static PyObject *
f_reset_stats(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	cow_stats_reset();
	Py_RETURN_NONE;
}

static const struct pycow_counter alloc_counters[] = {
	PYCOW_COUNTER(cow_alloc_stats_t, allocs),
	PYCOW_COUNTER(cow_alloc_stats_t, frees),
	PYCOW_COUNTER(cow_alloc_stats_t, failures),
	PYCOW_COUNTER(cow_alloc_stats_t, live_allocs),
	PYCOW_COUNTER(cow_alloc_stats_t, live_bytes),
	PYCOW_COUNTER(cow_alloc_stats_t, total_bytes),
	{ NULL, 0 }
};

static PyObject *
f_memory_stats(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	cow_alloc_stats_t s;
	cow_allocator_t *a = cow_allocator_default();
	if (pycow_check(cow_allocator_stats(a, &s)) < 0)
		return NULL;
	PyObject *d = pycow_counters(&s, alloc_counters);
	if (d != NULL &&
	    put(d, "retained_bytes", cow_allocator_retained_bytes(a)) < 0)
		Py_CLEAR(d);
	if (d != NULL) {
		PyObject *name = PyUnicode_FromString(cow_allocator_name(a));
		if (name == NULL || PyDict_SetItemString(d, "allocator", name) < 0)
			Py_CLEAR(d);
		Py_XDECREF(name);
	}
	return d;
}

/* A byte count, or None for "no limit". */
static int
bytes_arg(PyObject *obj, size_t none_value, size_t *out)
{
	if (obj == Py_None) {
		*out = none_value;
		return 0;
	}
	size_t v = PyLong_AsSize_t(obj);
	if (v == (size_t)-1 && PyErr_Occurred())
		return -1;
	*out = v;
	return 0;
}

static PyObject *
f_set_memory_limit(PyObject *mod, PyObject *arg)
{
	(void)mod;
	size_t n;
	if (bytes_arg(arg, COW_ALLOCATOR_NO_LIMIT, &n) < 0 ||
	    pycow_check(cow_allocator_set_limit(cow_allocator_default(), n)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *
f_memory_limit(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	size_t n = cow_allocator_limit(cow_allocator_default());
	if (n == COW_ALLOCATOR_NO_LIMIT)
		Py_RETURN_NONE;
	return PyLong_FromSize_t(n);
}

static PyObject *
f_retained_bytes(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	return PyLong_FromSize_t(cow_allocator_retained_bytes(cow_allocator_default()));
}

static PyObject *
f_set_retain_limit(PyObject *mod, PyObject *arg)
{
	(void)mod;
	size_t n;
	if (bytes_arg(arg, COW_RETAIN_LIMIT_MAX, &n) < 0 || pycow_check(
	    cow_allocator_set_retain_limit(cow_allocator_default(), n)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *
f_trim(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	cow_status_t st;
	Py_BEGIN_ALLOW_THREADS
	st = cow_allocator_trim(cow_allocator_default());
	Py_END_ALLOW_THREADS
	if (pycow_check(st) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* --- reshape mode and shadow policy --------------------------------- */

static PyObject *
f_set_reshape_mode(PyObject *mod, PyObject *arg)
{
	(void)mod;
	int m;
	if (lookup(reshape_modes, arg, "reshape mode", &m) < 0 ||
	    pycow_check(cow_reshape_mode_set((cow_reshape_mode_t)m)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *
f_get_reshape_mode(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	return name_of(reshape_modes, cow_reshape_mode_effective());
}

static PyObject *
f_set_shadow_policy(PyObject *mod, PyObject *arg)
{
	(void)mod;
	int p;
	if (lookup(shadow_policies, arg, "shadow policy", &p) < 0 ||
	    pycow_check(cow_shadow_policy_set((cow_shadow_policy_t)p)) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *
f_get_shadow_policy(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	return name_of(shadow_policies, cow_shadow_policy_get());
}

/* --- context managers ----------------------------------------------- */

/* reshape_mode(mode): the calling thread's override inside the block. */
typedef struct {
	PyObject_HEAD
	cow_reshape_mode_t mode, previous;
} reshape_mode_cm;

static PyObject *
reshape_mode_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "mode", NULL };
	PyObject *name;
	int m;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:reshape_mode", kwlist, &name) ||
	    lookup(reshape_modes, name, "reshape mode", &m) < 0)
		return NULL;
	reshape_mode_cm *self = (reshape_mode_cm *)type->tp_alloc(type, 0);
	if (self != NULL) {
		self->mode = (cow_reshape_mode_t)m;
		self->previous = COW_RESHAPE_INHERIT;
	}
	return (PyObject *)self;
}

static PyObject *
reshape_mode_enter(PyObject *o, PyObject *unused)
{
	(void)unused;
	reshape_mode_cm *self = (reshape_mode_cm *)o;
	if (pycow_check(cow_reshape_mode_set_thread(self->mode,
	    &self->previous)) < 0)
		return NULL;
	return Py_NewRef(o);
}

static PyObject *
reshape_mode_exit(PyObject *o, PyObject *args)
{
	(void)args;
	reshape_mode_cm *self = (reshape_mode_cm *)o;
	if (pycow_check(cow_reshape_mode_set_thread(self->previous, NULL)) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

static PyMethodDef reshape_mode_methods[] = {
	{ "__enter__", reshape_mode_enter, METH_NOARGS,
	  "__enter__($self, /)\n--\n\n"
	  "set the calling thread's reshape mode" },
	{ "__exit__", reshape_mode_exit, METH_VARARGS,
	  "__exit__($self, /, *exc_info)\n--\n\n"
	  "restore the one before" },
	{ NULL, NULL, 0, NULL }
};

PyTypeObject pycow_reshape_mode_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore.reshape_mode",
	.tp_basicsize = sizeof(reshape_mode_cm),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "reshape_mode(mode)\n--\n\n"
	    "A context manager; inside the block the calling thread's reshape "
	    "mode is mode ('alias', 'lazy_copy', 'warn').",
	.tp_new = reshape_mode_new,
	.tp_methods = reshape_mode_methods,
};

/* functional(): tensors the calling thread creates inside are functional. */
typedef struct {
	PyObject_HEAD
	bool previous;
} functional_cm;

static PyObject *
functional_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	if (!PyArg_ParseTuple(args, ":functional") ||
	    (kw != NULL && PyDict_GET_SIZE(kw) != 0)) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "functional() takes "
			    "no arguments");
		return NULL;
	}
	return type->tp_alloc(type, 0);
}

static PyObject *
functional_enter(PyObject *o, PyObject *unused)
{
	(void)unused;
	functional_cm *self = (functional_cm *)o;
	if (pycow_check(cow_functional_mode_set_thread(true, &self->previous)) < 0)
		return NULL;
	return Py_NewRef(o);
}

static PyObject *
functional_exit(PyObject *o, PyObject *args)
{
	(void)args;
	functional_cm *self = (functional_cm *)o;
	if (pycow_check(cow_functional_mode_set_thread(self->previous, NULL)) < 0)
		return NULL;
	Py_RETURN_FALSE;
}

static PyMethodDef functional_methods[] = {
	{ "__enter__", functional_enter, METH_NOARGS,
	  "__enter__($self, /)\n--\n\n"
	  "new tensors of the calling thread become functional" },
	{ "__exit__", functional_exit, METH_VARARGS,
	  "__exit__($self, /, *exc_info)\n--\n\n"
	  "as before the block" },
	{ NULL, NULL, 0, NULL }
};

PyTypeObject pycow_functional_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore.functional",
	.tp_basicsize = sizeof(functional_cm),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "functional()\n--\n\n"
	    "A context manager; tensors the calling thread creates inside the "
	    "block are functional (no views or in-place "
	    "writes reach memory until synced; docs/functionalization.md).",
	.tp_new = functional_new,
	.tp_methods = functional_methods,
};

PyMethodDef pycow_mode_functions[] = {
	{ "stats", f_stats, METH_NOARGS,
	  "stats()\n--\n\nthe copy-on-write counters (cow_stats_t) as a dict" },
	{ "reset_stats", f_reset_stats, METH_NOARGS,
	  "reset_stats()\n--\n\n"
	  "count from zero again" },
	{ "memory_stats", f_memory_stats, METH_NOARGS,
	  "memory_stats()\n--\n\nthe default allocator's counters as a dict" },
	{ "set_memory_limit", f_set_memory_limit, METH_O,
	  "set_memory_limit(nbytes, /)\n--\n\n"
	  "the allocator's budget: bytes, or None for none" },
	{ "memory_limit", f_memory_limit, METH_NOARGS,
	  "memory_limit()\n--\n\n"
	  "the allocator's budget in bytes, None for none" },
	{ "retained_bytes", f_retained_bytes, METH_NOARGS,
	  "retained_bytes()\n--\n\n"
	  "freed memory the allocator keeps for reuse" },
	{ "set_retain_limit", f_set_retain_limit, METH_O,
	  "set_retain_limit(nbytes, /)\n--\n\n"
	  "cap on retained memory (jemalloc only): bytes, or None for the "
	  "largest cap (COW_RETAIN_LIMIT_MAX)" },
	{ "trim", f_trim, METH_NOARGS,
	  "trim()\n--\n\n"
	  "give retained memory back now" },
	{ "set_reshape_mode", f_set_reshape_mode, METH_O,
	  "set_reshape_mode(mode, /)\n--\n\n"
	  "the reshape mode, process-wide: 'alias', 'lazy_copy' or 'warn'" },
	{ "get_reshape_mode", f_get_reshape_mode, METH_NOARGS,
	  "get_reshape_mode()\n--\n\n"
	  "the calling thread's effective reshape mode" },
	{ "set_shadow_policy", f_set_shadow_policy, METH_O,
	  "set_shadow_policy(policy, /)\n--\n\n"
	  "the shadow policy, process-wide: 'warn_once', 'warn_always' or 'error'" },
	{ "get_shadow_policy", f_get_shadow_policy, METH_NOARGS,
	  "get_shadow_policy()\n--\n\nthe process-wide shadow policy" },
	{ NULL, NULL, 0, NULL }
};
