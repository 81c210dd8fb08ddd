/*
 * files.c - snapshots and safetensors files from Python, with the names
 * the safetensors package uses: save_file, load_file, safe_open, and
 * snapshot() with its background save (include/cowstore/snapshot.h,
 * include/cowstore/safetensors.h; docs/python.md, "Files and snapshots").
 *
 * Locks. Taking a snapshot is a read of every tensor in it: the take holds
 * the stripe of each tensor for reading (guard.c: a guard is a set of
 * stripes, taken in index order like any op's), with the GIL released,
 * and lets them go once it returns; after it, writers on any thread need
 * nothing. Saves and loads take no stripe.
 *
 * The job thread. A background save runs on a thread of the library's
 * (cow_safetensors_save_start), which must never need the GIL: it would
 * wait for it while holding the library's state, and a thread holding the
 * GIL may wait for that state. The only Python it could reach is a
 * producer's deleter, when it drops the last share of memory a Python
 * object owns (from_buffer, a read-only DLPack import). Such memory is
 * read-only memory whenever a snapshot can share it (a writable import is
 * pinned for life, and the take copies pinned storages); so a Snapshot
 * object keeps one more lazy clone of every storage over read-only memory
 * it took, and a SaveJob keeps its Snapshot: the job thread never drops
 * the last share of such memory, nor the snapshot's last reference. Every
 * write to read-only memory copies anyway, so those clones cost no copy;
 * they keep the memory mapped until the Snapshot object goes.
 */
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "pycow.h"

#define T(o) (((pycow_tensor *)(o))->t)

/* --- arguments ------------------------------------------------------ */

/* A str as NUL-terminated UTF-8 (borrowed from @s); NULL with an exception
 * naming @func and @what when it is not a str or holds a NUL. */
static const char *
utf8_arg(PyObject *s, const char *func, const char *what)
{
	Py_ssize_t n;
	const char *p;

	if (!PyUnicode_Check(s)) {
		PyErr_Format(PyExc_TypeError, "%s: %s is a str, not %.100s",
		    func, what, Py_TYPE(s)->tp_name);
		return NULL;
	}
	if ((p = PyUnicode_AsUTF8AndSize(s, &n)) == NULL)
		return NULL;
	if (strlen(p) != (size_t)n) {
		PyErr_Format(PyExc_ValueError, "%s: %s %R holds a NUL "
		    "character (the file's C strings cannot)", func, what, s);
		return NULL;
	}
	return p;
}

/* The items of @mapping as a list of (key, value) pairs; NULL with a
 * TypeError naming @func and @arg when it is not a mapping. */
static PyObject *
items_arg(PyObject *mapping, const char *func, const char *arg)
{
	if (!PyDict_Check(mapping) && (!PyMapping_Check(mapping) ||
	    !PyObject_HasAttrString(mapping, "items"))) {
		PyErr_Format(PyExc_TypeError, "%s: %s is a mapping of names to "
		    "%s, not %.100s", func, arg, strcmp(arg, "metadata") == 0 ?
		    "str" : "tensors", Py_TYPE(mapping)->tp_name);
		return NULL;
	}
	PyObject *items = PyMapping_Items(mapping);
	if (items != NULL && !PyList_CheckExact(items)) {
		PyObject *list = PySequence_List(items);
		Py_DECREF(items);
		items = list;
	}
	return items;
}

/* A file name: str, bytes or os.PathLike, as bytes (a new reference). */
static PyObject *
path_arg(PyObject *obj)
{
	PyObject *path = NULL;

	if (!PyUnicode_FSConverter(obj, &path))
		return NULL;
	return path;
}

/* "metadata" as C arrays of UTF-8 strings, borrowed from @items (which the
 * caller keeps until the save has begun: the header is built then). */
struct metadata {
	PyObject *items;
	size_t count;
	const char **keys, **values;
};

static void
metadata_free(struct metadata *md)
{
	PyMem_Free(md->keys);
	PyMem_Free(md->values);
	Py_XDECREF(md->items);
}

static int
metadata_arg(PyObject *obj, const char *func, struct metadata *md)
{
	memset(md, 0, sizeof *md);
	if (obj == NULL || obj == Py_None)
		return 0;
	if ((md->items = items_arg(obj, func, "metadata")) == NULL)
		return -1;
	size_t n = (size_t)PyList_GET_SIZE(md->items);
	md->keys = PyMem_Calloc(n + 1, sizeof *md->keys);
	md->values = PyMem_Calloc(n + 1, sizeof *md->values);
	if (md->keys == NULL || md->values == NULL) {
		PyErr_NoMemory();
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		PyObject *kv = PyList_GET_ITEM(md->items, (Py_ssize_t)i);
		if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) {
			PyErr_Format(PyExc_TypeError, "%s: metadata.items() "
			    "gave %.100s, not a (key, value) pair", func,
			    Py_TYPE(kv)->tp_name);
			goto fail;
		}
		if ((md->keys[i] = utf8_arg(PyTuple_GET_ITEM(kv, 0), func,
		    "each metadata key")) == NULL ||
		    (md->values[i] = utf8_arg(PyTuple_GET_ITEM(kv, 1), func,
		    "each metadata value")) == NULL)
			goto fail;
	}
	md->count = n;
	return 0;
fail:
	metadata_free(md);
	memset(md, 0, sizeof *md);
	return -1;
}

static int
mode_arg(PyObject *obj, cow_snapshot_save_mode_t *mode, const char *func)
{
	if (obj == NULL || obj == Py_None) {
		*mode = COW_SNAPSHOT_STREAM;
		return 0;
	}
	if (PyUnicode_Check(obj)) {
		if (PyUnicode_CompareWithASCIIString(obj, "stream") == 0) {
			*mode = COW_SNAPSHOT_STREAM;
			return 0;
		}
		if (PyUnicode_CompareWithASCIIString(obj, "persist_first") == 0) {
			*mode = COW_SNAPSHOT_PERSIST_FIRST;
			return 0;
		}
	}
	PyErr_Format(PyExc_ValueError, "%s: mode is \"stream\" or "
	    "\"persist_first\", not %R", func, obj);
	return -1;
}

/* --- taking a snapshot ---------------------------------------------- */

/* What a take gives: the snapshot, its names (a tuple of str, in the
 * mapping's order) and, if asked for, the extra clones of its storages
 * over read-only memory (the header's "The job thread"). */
struct taken {
	cow_snapshot_t *snap;
	PyObject *names;
	cow_storage_t **keep;
	size_t nkeep;
};

static void
keep_release(cow_storage_t **keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cow_storage_release(keep[i]);
	PyMem_Free(keep);
}

/* Under the take's stripes: a lazy clone of each distinct storage over
 * read-only memory among @ts. */
static cow_status_t
keep_read_only(cow_tensor_t *const *ts, size_t n, cow_storage_t **keep,
    size_t *nkeep)
{
	cow_status_t st = COW_OK;

	*nkeep = 0;
	for (size_t i = 0; i < n && st == COW_OK; i++) {
		cow_storage_t *s = cow_tensor_storage(ts[i]);
		bool seen = false;
		if (s == NULL || !cow_storage_is_read_only(s))
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = cow_tensor_storage(ts[k]) == s;
		if (!seen && (st = cow_storage_lazy_clone(s, &keep[*nkeep])) ==
		    COW_OK)
			COW__FAULT_POINT(snapshot_keep, (*nkeep)++);
	}
	return st;
}

/* Take a snapshot of @mapping (names to anything asarray converts) for
 * @func; @keep: also the clones a background save needs. 0, or -1 with
 * an exception. */
static int
take(PyObject *mapping, const char *func, bool keep, struct taken *out)
{
	PyObject *items, **objs = NULL;
	cow_tensor_t **ts = NULL;
	const char **names = NULL;
	size_t n, got = 0, nkeep = 0;
	cow_storage_t **kept = NULL;
	cow_status_t st = COW_OK, kst = COW_OK;
	cow_snapshot_t *snap = NULL;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if ((items = items_arg(mapping, func, "tensors")) == NULL)
		return -1;
	n = (size_t)PyList_GET_SIZE(items);
	objs = PyMem_Calloc(n + 1, sizeof *objs);
	ts = PyMem_Calloc(n + 1, sizeof *ts);
	names = PyMem_Calloc(n + 1, sizeof *names);
	if (keep)
		kept = PyMem_Calloc(n + 1, sizeof *kept);
	if (objs == NULL || ts == NULL || names == NULL ||
	    (keep && kept == NULL)) {
		PyErr_NoMemory();
		goto out;
	}
	for (; got < n; got++) {
		PyObject *kv = PyList_GET_ITEM(items, (Py_ssize_t)got);
		if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) {
			PyErr_Format(PyExc_TypeError, "%s: tensors.items() gave "
			    "%.100s, not a (name, tensor) pair", func,
			    Py_TYPE(kv)->tp_name);
			goto out;
		}
		PyObject *key = PyTuple_GET_ITEM(kv, 0);
		if ((names[got] = utf8_arg(key, func, "each tensor's name")) ==
		    NULL)
			goto out;
		PyObject *what = PyUnicode_FromFormat("%s: tensors[%R]", func,
		    key);
		const char *w = what != NULL ? PyUnicode_AsUTF8(what) : NULL;
		if (w != NULL)
			objs[got] = pycow_asarray(PyTuple_GET_ITEM(kv, 1), w);
		Py_XDECREF(what);
		if (objs[got] == NULL)
			goto out;
		ts[got] = T(objs[got]);
	}
	/* A read of every tensor: each stripe for reading, in index order. */
	{
		struct pycow_guard g = { 0 };
		for (size_t i = 0; i < n; i++)
			COW__FAULT_POINT(take_stripes,
			    pycow_guard_add(&g, ts[i], false));
		PYCOW_LOCKED(&g,
		    st = cow_snapshot_take(n, ts, names, &snap);
		    if (st == COW_OK && keep)
			kst = keep_read_only(ts, n, kept, &nkeep));
	}
	if (st == COW_OK && kst != COW_OK) {
		cow_snapshot_release(snap);
		keep_release(kept, nkeep);
		kept = NULL;
		st = kst;
	}
	if (pycow_check(st) < 0)
		goto out;
	out->names = PyTuple_New((Py_ssize_t)n);
	for (size_t i = 0; out->names != NULL && i < n; i++) {
		PyObject *key = PyTuple_GET_ITEM(PyList_GET_ITEM(items,
		    (Py_ssize_t)i), 0);
		PyTuple_SET_ITEM(out->names, (Py_ssize_t)i, Py_NewRef(key));
	}
	if (out->names == NULL) {
		cow_snapshot_release(snap);
		goto out;
	}
	out->snap = snap;
	out->keep = kept;
	out->nkeep = nkeep;
	kept = NULL;
	rc = 0;
out:
	if (kept != NULL)
		keep_release(kept, nkeep);
	for (size_t i = 0; i < got && objs != NULL; i++)
		Py_XDECREF(objs[i]);
	PyMem_Free(objs);
	PyMem_Free(ts);
	PyMem_Free(names);
	Py_DECREF(items);
	return rc;
}

/* --- save_file ------------------------------------------------------ */

static PyObject *
f_save_file(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "tensors", "filename", "metadata", NULL };
	PyObject *tensors, *filename, *md_obj = Py_None, *path;
	struct metadata md;
	struct taken tk;
	cow_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:save_file", kwlist,
	    &tensors, &filename, &md_obj))
		return NULL;
	if ((path = path_arg(filename)) == NULL)
		return NULL;
	if (metadata_arg(md_obj, "save_file", &md) < 0) {
		Py_DECREF(path);
		return NULL;
	}
	if (take(tensors, "save_file", false, &tk) < 0) {
		metadata_free(&md);
		Py_DECREF(path);
		return NULL;
	}
	cow_safetensors_save_t opts = {
		.mode = COW_SNAPSHOT_STREAM,
		.metadata_count = md.count,
		.metadata_keys = md.keys,
		.metadata_values = md.values,
	};
	const char *p = PyBytes_AS_STRING(path);
	Py_BEGIN_ALLOW_THREADS
	st = cow_safetensors_save(tk.snap, p, &opts);
	Py_END_ALLOW_THREADS
	/* With the GIL: the last share of a buffer's memory runs its
	 * deleter here. */
	cow_snapshot_release(tk.snap);
	Py_DECREF(tk.names);
	metadata_free(&md);
	Py_DECREF(path);
	if (pycow_check(st) < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* --- SaveJob -------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	cow_snapshot_job_t *job;
	PyObject *snapshot;       /* the Snapshot it saves (kept alive) */
	PyObject *path;           /* str, for repr */
} pycow_job;

static void
job_dealloc(PyObject *self)
{
	pycow_job *j = (pycow_job *)self;

	/* Cancels a save still running, and waits for it to stop. */
	if (j->job != NULL) {
		cow_snapshot_job_t *job = j->job;
		Py_BEGIN_ALLOW_THREADS
		cow_snapshot_job_release(job);
		Py_END_ALLOW_THREADS
	}
	Py_XDECREF(j->snapshot);
	Py_XDECREF(j->path);
	PyObject_Free(self);
}

static PyObject *
job_get_progress(PyObject *self, void *c)
{
	(void)c;
	uint64_t done = 0, total = 0;

	cow_snapshot_job_progress(((pycow_job *)self)->job, &done, &total);
	return Py_BuildValue("(KK)", (unsigned long long)done,
	    (unsigned long long)total);
}

static PyObject *
job_done(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyBool_FromLong(cow_snapshot_job_done(((pycow_job *)self)->job));
}

static PyObject *
job_wait(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_snapshot_job_t *job = ((pycow_job *)self)->job;
	cow_status_t st;

	Py_BEGIN_ALLOW_THREADS
	st = cow_snapshot_job_wait(job);
	Py_END_ALLOW_THREADS
	return pycow_check(st) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *
job_cancel(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_snapshot_job_cancel(((pycow_job *)self)->job);
	Py_RETURN_NONE;
}

static PyObject *
job_repr(PyObject *self)
{
	pycow_job *j = (pycow_job *)self;
	uint64_t done = 0, total = 0;

	cow_snapshot_job_progress(j->job, &done, &total);
	return PyUnicode_FromFormat("<cowstore.SaveJob %R: %llu of %llu "
	    "bytes%s>", j->path, (unsigned long long)done,
	    (unsigned long long)total, cow_snapshot_job_done(j->job) ?
	    ", done" : "");
}

static PyMethodDef job_methods[] = {
	{ "done", job_done, METH_NOARGS,
	  "done($self, /)\n--\n\n"
	  "whether the save has ended" },
	{ "wait", job_wait, METH_NOARGS,
	  "wait($self, /)\n--\n\n"
	  "wait for the save to end (the GIL released); raises its "
	  "error, every time it is called" },
	{ "cancel", job_cancel, METH_NOARGS,
	  "cancel($self, /)\n--\n\n"
	  "stop the save at its next chunk (wait() then raises "
	  "cowstore.CancelledError)" },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef job_getset[] = {
	{ "progress", job_get_progress, NULL,
	  "(done, total): bytes of tensor data written so far, and in all",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

PyTypeObject pycow_job_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore.SaveJob",
	.tp_basicsize = sizeof(pycow_job),
	.tp_dealloc = job_dealloc,
	.tp_repr = job_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A snapshot's save running on a thread of the library's "
	    "(Snapshot.save). Dropping it cancels the save if it still runs, "
	    "and waits for it.",
	.tp_methods = job_methods,
	.tp_getset = job_getset,
};

/* --- Snapshot ------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	cow_snapshot_t *snap;
	PyObject *names;          /* tuple of str, the snapshot's order */
	PyObject *index;          /* dict: name -> index */
	cow_storage_t **keep;     /* clones of read-only memory (header) */
	size_t nkeep;
} pycow_snap;

#define SNAP(o) ((pycow_snap *)(o))

static void
snap_dealloc(PyObject *self)
{
	pycow_snap *s = SNAP(self);

	/* With the GIL: dropping the last share of a buffer's memory runs
	 * its deleter on this thread. */
	cow_snapshot_release(s->snap);
	keep_release(s->keep, s->nkeep);
	Py_XDECREF(s->names);
	Py_XDECREF(s->index);
	PyObject_Free(self);
}

/* The index of the tensor named @name; -1 with KeyError. */
static Py_ssize_t
snap_index(PyObject *self, PyObject *name)
{
	PyObject *i = PyDict_GetItemWithError(SNAP(self)->index, name);

	if (i == NULL) {
		if (!PyErr_Occurred())
			PyErr_SetObject(PyExc_KeyError, name);
		return -1;
	}
	return PyLong_AsSsize_t(i);
}

static Py_ssize_t
snap_len(PyObject *self)
{
	return PyTuple_GET_SIZE(SNAP(self)->names);
}

static PyObject *
snap_get_names(PyObject *self, void *c)
{
	(void)c;
	return Py_NewRef(SNAP(self)->names);
}

static PyObject *
snap_get_count(PyObject *self, void *c)
{
	(void)c;
	return PyLong_FromSize_t(cow_snapshot_count(SNAP(self)->snap));
}

static PyObject *
snap_get(PyObject *self, PyObject *name)
{
	cow_snapshot_t *snap = SNAP(self)->snap;
	Py_ssize_t i = snap_index(self, name);
	cow_tensor_t *out = NULL;
	cow_status_t st;

	if (i < 0)
		return NULL;
	/* The GIL released: a persist-first writer may hold the tensor's
	 * group while it writes it to the file. */
	Py_BEGIN_ALLOW_THREADS
	st = cow_snapshot_get(snap, (size_t)i, &out);
	Py_END_ALLOW_THREADS
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(out);
}

static PyObject *
snap_is_held(PyObject *self, PyObject *name)
{
	Py_ssize_t i = snap_index(self, name);

	if (i < 0)
		return NULL;
	return PyBool_FromLong(cow_snapshot_is_held(SNAP(self)->snap,
	    (size_t)i));
}

static PyObject *
snap_release(PyObject *self, PyObject *args)
{
	PyObject *name = Py_None;
	size_t from = 0, to = (size_t)snap_len(self);

	if (!PyArg_ParseTuple(args, "|O:release", &name))
		return NULL;
	if (name != Py_None) {
		Py_ssize_t i = snap_index(self, name);
		if (i < 0)
			return NULL;
		from = (size_t)i;
		to = from + 1;
	}
	for (size_t i = from; i < to; i++)
		if (pycow_check(cow_snapshot_release_tensor(SNAP(self)->snap,
		    i)) < 0)
			return NULL;
	Py_RETURN_NONE;
}

static const struct pycow_counter snap_counters[] = {
	PYCOW_COUNTER(cow_snapshot_stats_t, tensors),
	PYCOW_COUNTER(cow_snapshot_stats_t, bytes),
	PYCOW_COUNTER(cow_snapshot_stats_t, held_tensors),
	PYCOW_COUNTER(cow_snapshot_stats_t, extra_bytes),
	PYCOW_COUNTER(cow_snapshot_stats_t, extra_peak),
	PYCOW_COUNTER(cow_snapshot_stats_t, writer_copies),
	PYCOW_COUNTER(cow_snapshot_stats_t, writer_persists),
	PYCOW_COUNTER(cow_snapshot_stats_t, pinned_copies),
	PYCOW_COUNTER(cow_snapshot_stats_t, pinned_bytes),
	{ NULL, 0 }
};

static PyObject *
snap_stats(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_snapshot_stats_t s;

	cow_snapshot_stats(SNAP(self)->snap, &s);
	return pycow_counters(&s, snap_counters);
}

static PyObject *
snap_cancel(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_snapshot_cancel(SNAP(self)->snap);
	Py_RETURN_NONE;
}

static PyObject *
snap_save(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "filename", "metadata", "mode", "keep",
	    NULL };
	PyObject *filename, *md_obj = Py_None, *mode_obj = Py_None, *path;
	int keep = 0;
	cow_snapshot_save_mode_t mode;
	struct metadata md;
	cow_snapshot_job_t *job = NULL;
	cow_status_t st;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$Op:save", kwlist,
	    &filename, &md_obj, &mode_obj, &keep))
		return NULL;
	if (mode_arg(mode_obj, &mode, "Snapshot.save") < 0 ||
	    (path = path_arg(filename)) == NULL)
		return NULL;
	if (metadata_arg(md_obj, "Snapshot.save", &md) < 0) {
		Py_DECREF(path);
		return NULL;
	}
	pycow_job *j = PyObject_New(pycow_job, &pycow_job_type);
	if (j == NULL) {
		metadata_free(&md);
		Py_DECREF(path);
		return NULL;
	}
	j->job = NULL;
	j->snapshot = Py_NewRef(self);
	j->path = PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(path),
	    PyBytes_GET_SIZE(path));
	if (j->path == NULL) {
		Py_DECREF(j);
		metadata_free(&md);
		Py_DECREF(path);
		return NULL;
	}
	cow_safetensors_save_t opts = {
		.mode = mode,
		.metadata_count = md.count,
		.metadata_keys = md.keys,
		.metadata_values = md.values,
		.keep = keep != 0,
	};
	cow_snapshot_t *snap = SNAP(self)->snap;
	const char *p = PyBytes_AS_STRING(path);
	/* The temporary file is made and its header written here. */
	Py_BEGIN_ALLOW_THREADS
	st = cow_safetensors_save_start(snap, p, &opts, &job);
	Py_END_ALLOW_THREADS
	metadata_free(&md);
	Py_DECREF(path);
	if (st == COW_OK)
		j->job = job;
	if (pycow_check(st) < 0) {
		Py_DECREF(j);
		return NULL;
	}
	return (PyObject *)j;
}

static PyObject *
snap_repr(PyObject *self)
{
	cow_snapshot_stats_t s;

	cow_snapshot_stats(SNAP(self)->snap, &s);
	return PyUnicode_FromFormat("<cowstore.Snapshot of %llu tensors, "
	    "%llu bytes, %llu held>", (unsigned long long)s.tensors,
	    (unsigned long long)s.bytes, (unsigned long long)s.held_tensors);
}

static PyMethodDef snap_methods[] = {
	{ "get", snap_get, METH_O,
	  "get($self, name, /)\n--\n\n"
	  "the snapshot's value of that tensor, a lazy copy "
	  "(cowstore.ReleasedError once the snapshot released it)" },
	{ "is_held", snap_is_held, METH_O,
	  "is_held($self, name, /)\n--\n\n"
	  "whether the snapshot still holds that tensor (not "
	  "saved or released yet)" },
	{ "release", snap_release, METH_VARARGS,
	  "release($self, name=None, /)\n--\n\n"
	  "release that tensor now (None: every one), so "
	  "that its next write steals instead of copying" },
	{ "stats", snap_stats, METH_NOARGS,
	  "stats($self, /)\n--\n\n"
	  "the snapshot's accounting (cow_snapshot_stats_t) as a "
	  "dict" },
	{ "cancel", snap_cancel, METH_NOARGS,
	  "cancel($self, /)\n--\n\n"
	  "stop the save running on this snapshot (or the next one "
	  "to start) at its next chunk" },
	{ "save", (PyCFunction)(void (*)(void))snap_save,
	  METH_VARARGS | METH_KEYWORDS,
	  "save($self, /, filename, metadata=None, *, mode='stream', keep=False)\n--\n\n"
	  "save "
	  "as a safetensors file on a thread of the library's; returns a "
	  "SaveJob at once" },
	{ NULL, NULL, 0, NULL }
};

static PyGetSetDef snap_getset[] = {
	{ "names", snap_get_names, NULL,
	  "the tensors' names, a tuple in the mapping's order", NULL },
	{ "count", snap_get_count, NULL, "the number of tensors", NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static PySequenceMethods snap_sequence = {
	.sq_length = snap_len,
};

PyTypeObject pycow_snapshot_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore.Snapshot",
	.tp_basicsize = sizeof(pycow_snap),
	.tp_dealloc = snap_dealloc,
	.tp_repr = snap_repr,
	.tp_as_sequence = &snap_sequence,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A consistent copy of named tensors, taken with no byte "
	    "copied (cowstore.snapshot; docs/snapshots.md).",
	.tp_methods = snap_methods,
	.tp_getset = snap_getset,
};

static PyObject *
f_snapshot(PyObject *mod, PyObject *tensors)
{
	(void)mod;
	struct taken tk;
	pycow_snap *s;

	if (take(tensors, "snapshot", true, &tk) < 0)
		return NULL;
	if ((s = PyObject_New(pycow_snap, &pycow_snapshot_type)) == NULL) {
		cow_snapshot_release(tk.snap);
		keep_release(tk.keep, tk.nkeep);
		Py_DECREF(tk.names);
		return NULL;
	}
	s->snap = tk.snap;
	s->names = tk.names;
	s->keep = tk.keep;
	s->nkeep = tk.nkeep;
	s->index = PyDict_New();
	for (Py_ssize_t i = 0; s->index != NULL &&
	    i < PyTuple_GET_SIZE(s->names); i++) {
		PyObject *k = PyLong_FromSsize_t(i);
		if (k == NULL || PyDict_SetItem(s->index,
		    PyTuple_GET_ITEM(s->names, i), k) < 0)
			Py_CLEAR(s->index);
		Py_XDECREF(k);
	}
	if (s->index == NULL) {
		Py_DECREF(s);
		return NULL;
	}
	return (PyObject *)s;
}

/* --- loading -------------------------------------------------------- */

/* The file's tensor indices sorted by name (UTF-8 byte order, which is
 * code point order: Python's sorted() of the names). */
struct named {
	const char *name;
	size_t i;
};

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name,
	    ((const struct named *)b)->name);
}

/* NULL with MemoryError. */
static size_t *
sorted_indices(const cow_safetensors_t *f, size_t n)
{
	struct named *v = PyMem_Calloc(n + 1, sizeof *v);
	size_t *idx = PyMem_Calloc(n + 1, sizeof *idx);

	if (v == NULL || idx == NULL) {
		PyMem_Free(v);
		PyMem_Free(idx);
		PyErr_NoMemory();
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].name = cow_safetensors_name(f, i);
		v[i].i = i;
	}
	qsort(v, n, sizeof *v, by_name);
	for (size_t i = 0; i < n; i++)
		idx[i] = v[i].i;
	PyMem_Free(v);
	return idx;
}

static int
open_file(PyObject *filename, bool pread, cow_safetensors_t **out)
{
	PyObject *path = path_arg(filename);
	cow_status_t st;

	if (path == NULL)
		return -1;
	const char *p = PyBytes_AS_STRING(path);
	unsigned flags = pread ? COW_SAFETENSORS_PREAD : 0;
	Py_BEGIN_ALLOW_THREADS
	st = cow_safetensors_open(p, flags, out);
	Py_END_ALLOW_THREADS
	Py_DECREF(path);
	return pycow_check(st);
}

/* The file's metadata as a dict, or None when it has none. */
static PyObject *
file_metadata(const cow_safetensors_t *f)
{
	size_t n = cow_safetensors_metadata_count(f);
	PyObject *d;

	if (n == 0)
		Py_RETURN_NONE;
	if ((d = PyDict_New()) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		PyObject *v = PyUnicode_FromString(
		    cow_safetensors_metadata_value(f, i));
		if (v == NULL || PyDict_SetItemString(d,
		    cow_safetensors_metadata_key(f, i), v) < 0) {
			Py_XDECREF(v);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(v);
	}
	return d;
}

static PyObject *
f_load_file(PyObject *mod, PyObject *args, PyObject *kw)
{
	(void)mod;
	static char *kwlist[] = { "filename", "pread", NULL };
	PyObject *filename, *d = NULL;
	int pread = 0;
	cow_safetensors_t *f;
	cow_tensor_t **ts = NULL;
	size_t *idx = NULL, n, got = 0;
	cow_status_t st = COW_OK;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p:load_file", kwlist,
	    &filename, &pread))
		return NULL;
	if (open_file(filename, pread != 0, &f) < 0)
		return NULL;
	n = cow_safetensors_count(f);
	if ((idx = sorted_indices(f, n)) == NULL)
		goto out;
	if ((ts = PyMem_Calloc(n + 1, sizeof *ts)) == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	/* Every tensor with the GIL released (pread mode reads them). */
	Py_BEGIN_ALLOW_THREADS
	for (; got < n && st == COW_OK; got++)
		if ((st = cow_safetensors_get(f, idx[got], &ts[got])) != COW_OK)
			break;
	Py_END_ALLOW_THREADS
	if (pycow_check(st) < 0 || (d = PyDict_New()) == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		PyObject *t = pycow_wrap(ts[i]);
		ts[i] = NULL;
		if (t == NULL || PyDict_SetItemString(d,
		    cow_safetensors_name(f, idx[i]), t) < 0) {
			Py_XDECREF(t);
			Py_CLEAR(d);
			break;
		}
		Py_DECREF(t);
	}
out:
	for (size_t i = 0; ts != NULL && i < n; i++)
		cow_tensor_release(ts[i]);
	PyMem_Free(ts);
	PyMem_Free(idx);
	cow_safetensors_close(f);
	return d;
}

/* --- safe_open ------------------------------------------------------ */

/* A handle may be closed by one thread while another uses it with the
 * GIL released: every use counts itself in @users (under the GIL), and
 * close() leaves the handle to the last use when one is running. */
typedef struct {
	PyObject_HEAD
	cow_safetensors_t *file;
	PyObject *path;           /* str, for repr */
	Py_ssize_t users;
	bool closed;
} pycow_open;

#define OPEN(o) ((pycow_open *)(o))

static cow_safetensors_t *
open_enter(PyObject *self)
{
	pycow_open *o = OPEN(self);

	if (o->closed || o->file == NULL) {
		PyErr_SetString(PyExc_ValueError, "safe_open: the file is "
		    "closed");
		return NULL;
	}
	o->users++;
	return o->file;
}

static void
open_leave(PyObject *self)
{
	pycow_open *o = OPEN(self);

	if (--o->users == 0 && o->closed && o->file != NULL) {
		cow_safetensors_close(o->file);
		o->file = NULL;
	}
}

static PyObject *
open_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "filename", "pread", NULL };
	PyObject *filename;
	int pread = 0;
	cow_safetensors_t *f;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$p:safe_open", kwlist,
	    &filename, &pread))
		return NULL;
	pycow_open *o = (pycow_open *)type->tp_alloc(type, 0);
	if (o == NULL)
		return NULL;
	if ((o->path = PyObject_Str(filename)) == NULL ||
	    open_file(filename, pread != 0, &f) < 0) {
		Py_DECREF(o);
		return NULL;
	}
	o->file = f;
	return (PyObject *)o;
}

static void
open_dealloc(PyObject *self)
{
	pycow_open *o = OPEN(self);

	/* No use runs: each holds a reference on @self. */
	cow_safetensors_close(o->file);
	Py_XDECREF(o->path);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *
open_keys(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_safetensors_t *f = open_enter(self);
	PyObject *list = NULL;
	size_t *idx = NULL, n;

	if (f == NULL)
		return NULL;
	n = cow_safetensors_count(f);
	if ((idx = sorted_indices(f, n)) != NULL)
		list = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; list != NULL && i < n; i++) {
		PyObject *s = PyUnicode_FromString(cow_safetensors_name(f,
		    idx[i]));
		if (s == NULL)
			Py_CLEAR(list);
		else
			PyList_SET_ITEM(list, (Py_ssize_t)i, s);
	}
	PyMem_Free(idx);
	open_leave(self);
	return list;
}

static PyObject *
open_get_tensor(PyObject *self, PyObject *name)
{
	const char *s = utf8_arg(name, "safe_open.get_tensor", "name");
	cow_safetensors_t *f;
	cow_tensor_t *out = NULL;
	cow_status_t st;
	size_t i;

	if (s == NULL || (f = open_enter(self)) == NULL)
		return NULL;
	if (cow_safetensors_find(f, s, &i) != COW_OK) {
		open_leave(self);
		PyErr_SetObject(PyExc_KeyError, name);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	st = cow_safetensors_get(f, i, &out);
	Py_END_ALLOW_THREADS
	open_leave(self);
	if (pycow_check(st) < 0)
		return NULL;
	return pycow_wrap(out);
}

static PyObject *
open_get_metadata(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_safetensors_t *f = open_enter(self);
	PyObject *d;

	if (f == NULL)
		return NULL;
	d = file_metadata(f);
	open_leave(self);
	return d;
}

static const struct pycow_counter file_counters[] = {
	PYCOW_COUNTER(cow_safetensors_stats_t, tensors),
	PYCOW_COUNTER(cow_safetensors_stats_t, unaligned_copies),
	PYCOW_COUNTER(cow_safetensors_stats_t, bytes_read),
	PYCOW_COUNTER(cow_safetensors_stats_t, mapped_bytes),
	{ NULL, 0 }
};

static PyObject *
open_stats(PyObject *self, PyObject *unused)
{
	(void)unused;
	cow_safetensors_t *f = open_enter(self);
	cow_safetensors_stats_t s;

	if (f == NULL)
		return NULL;
	cow_safetensors_stats(f, &s);
	open_leave(self);
	return pycow_counters(&s, file_counters);
}

static PyObject *
open_close(PyObject *self, PyObject *unused)
{
	(void)unused;
	pycow_open *o = OPEN(self);

	o->closed = true;
	if (o->users == 0 && o->file != NULL) {
		cow_safetensors_close(o->file);
		o->file = NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *
open_enter_ctx(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (OPEN(self)->closed) {
		PyErr_SetString(PyExc_ValueError, "safe_open: the file is "
		    "closed");
		return NULL;
	}
	return Py_NewRef(self);
}

static PyObject *
open_exit_ctx(PyObject *self, PyObject *args)
{
	(void)args;
	PyObject *r = open_close(self, NULL);
	Py_XDECREF(r);
	if (r == NULL)
		return NULL;
	Py_RETURN_FALSE;
}

static PyObject *
open_repr(PyObject *self)
{
	return PyUnicode_FromFormat("<cowstore.safe_open %R%s>",
	    OPEN(self)->path, OPEN(self)->closed ? " (closed)" : "");
}

static PyMethodDef open_methods[] = {
	{ "keys", open_keys, METH_NOARGS,
	  "keys($self, /)\n--\n\n"
	  "the tensors' names, sorted" },
	{ "get_tensor", open_get_tensor, METH_O,
	  "get_tensor($self, name, /)\n--\n\n"
	  "the tensor, zero copy over the mapping "
	  "(read-only memory: its first write copies it alone)" },
	{ "metadata", open_get_metadata, METH_NOARGS,
	  "metadata($self, /)\n--\n\n"
	  "the \"__metadata__\" strings as a dict, or None" },
	{ "stats", open_stats, METH_NOARGS,
	  "stats($self, /)\n--\n\n"
	  "tensors taken, unaligned copies, bytes read, mapped "
	  "bytes (cow_safetensors_stats_t) as a dict" },
	{ "close", open_close, METH_NOARGS,
	  "close($self, /)\n--\n\n"
	  "release the handle (the tensors taken stay valid)" },
	{ "__enter__", open_enter_ctx, METH_NOARGS,
	  "__enter__($self, /)\n--\n\n"
	  "the handle itself" },
	{ "__exit__", open_exit_ctx, METH_VARARGS,
	  "__exit__($self, /, *exc_info)\n--\n\n"
	  "close()" },
	{ NULL, NULL, 0, NULL }
};

PyTypeObject pycow_safe_open_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "cowstore.safe_open",
	.tp_basicsize = sizeof(pycow_open),
	.tp_dealloc = open_dealloc,
	.tp_repr = open_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "safe_open(filename, *, pread=False)\n--\n\n"
	    "A safetensors file, checked and indexed; a context manager "
	    "(docs/python.md).",
	.tp_methods = open_methods,
	.tp_new = open_new,
};

PyMethodDef pycow_file_functions[] = {
	{ "save_file", (PyCFunction)(void (*)(void))f_save_file,
	  METH_VARARGS | METH_KEYWORDS,
	  "save_file(tensors, filename, metadata=None)\n--\n\n"
	  "save a mapping of "
	  "names to tensors as a safetensors file, on this thread with the "
	  "GIL released" },
	{ "load_file", (PyCFunction)(void (*)(void))f_load_file,
	  METH_VARARGS | METH_KEYWORDS,
	  "load_file(filename, *, pread=False)\n--\n\n"
	  "a dict of the file's tensors, "
	  "zero copy over a read-only mapping" },
	{ "snapshot", f_snapshot, METH_O,
	  "snapshot(tensors, /)\n--\n\n"
	  "a Snapshot of a mapping of names to tensors" },
	{ NULL, NULL, 0, NULL }
};
