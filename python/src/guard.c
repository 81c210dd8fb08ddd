/*
 * guard.c - per-storage serialisation for Python threads.
 *
 * The library's contract (storage.h) leaves it to the caller to serialise a
 * write through a storage against every other use of that storage; tensors
 * on different storages (lazy copies included) need nothing. Python code
 * expects no such duty, and the module releases the GIL around work on
 * data, so the module keeps the contract itself: a table of read-write
 * locks, the storage's address choosing the stripe. Reads share a stripe,
 * writes take it alone; an op's stripes are taken in index order, so two
 * ops never wait for each other in a cycle. Functional tensors have no
 * storage of their own: they share one stripe, taken for writing.
 *
 * An op's guard is a set of stripes (struct pycow_guard: one bit per
 * stripe, for reading and for writing; STRIPES is 64), so an op may use
 * any number of tensors: a snapshot's take (files.c) reads every tensor
 * it is given, and takes each distinct stripe once, in index order, like
 * any op. A stripe wanted for reading and for writing is taken for
 * writing.
 *
 * The GIL is never held while waiting for a stripe (pycow_guard_lock runs
 * between Py_BEGIN_ALLOW_THREADS and Py_END_ALLOW_THREADS), so a thread
 * that holds a stripe and needs the GIL (a producer's deleter) always gets
 * it.
 *
 * Fork (os.fork and everything built on it: multiprocessing's fork
 * context, DataLoader workers, os.forkpty, subprocess with preexec_fn):
 * a child has only the thread that forked, so a stripe some other thread
 * held at the fork would stay held in the child for good. The handlers
 * registered with os.register_at_fork take every stripe for writing
 * before the fork, in index order (the order ops use, so no
 * cycle), and waiting with the GIL released as ops do; the parent then
 * unlocks them, and the child initialises them again (glibc's
 * pthread_rwlock_unlock tells a write unlock from a read unlock by the
 * owner's thread id, which the child's thread no longer has). So no op is
 * half done at a fork. While the forking thread holds them all, its own
 * ops (other fork handlers that use tensors) take none: it already holds
 * every stripe, and waiting for one would wait for itself.
 */
#include "core/fault.h"
#include "core/mutex.h"
#include "pycow.h"

#define STRIPES 64
/* A guard is a set of stripes, one bit each. */
_Static_assert(STRIPES <= 64, "struct pycow_guard has a bit per stripe");

/* Rank COW__RANK_PY_STRIPES (core/lockrank.h), before every lock of the
 * library: an op holds its stripes while it calls the library. Debug
 * builds check that a thread takes them in address (index) order. */
static cow__rwmutex_t stripes[STRIPES] = {
#define L1 COW__RWMUTEX_INITIALIZER(COW__RANK_PY_STRIPES)
#define L4 L1, L1, L1, L1
#define L16 L4, L4, L4, L4
	L16, L16, L16, L16
#undef L16
#undef L4
#undef L1
};

/* Forks under way on this thread, between the before and after handlers
 * (more than 1: a fork handler that forks): while it is not 0, this
 * thread holds every stripe. */
static _Thread_local int forking;
/* Ops of this thread holding their stripes now: more than 0 only while
 * Python code runs inside an op (a producer's deleter, with the GIL). */
static _Thread_local int in_ops;

/* The index of @t's stripe; *write is set for a functional tensor. */
static int
stripe_of(const cow_tensor_t *t, bool *write)
{
	cow_storage_t *s = cow_tensor_storage(t);
	if (s == NULL) {          /* functional: one stripe for all */
		*write = true;
		return 0;
	}
	uintptr_t h = (uintptr_t)s;
	h ^= h >> 17;
	h *= UINT64_C(0x9E3779B97F4A7C15) & UINTPTR_MAX;
	return 1 + (int)((h >> 7) % (STRIPES - 1));
}

void
pycow_guard_add(struct pycow_guard *g, const cow_tensor_t *t, bool write)
{
	int i = stripe_of(t, &write);

	if (write)
		g->write |= UINT64_C(1) << i;
	else
		g->read |= UINT64_C(1) << i;
}

void
pycow_guard_lock(struct pycow_guard *g)
{
	uint64_t all = g->read | g->write;
	int n = COW__FAULT_POINT(guard_stripes, STRIPES);

	if (forking > 0)
		return;
	/* In index order (the array's address order): every op and the fork
	 * handlers take stripes in one order, so none waits in a cycle. */
	for (int i = 0; i < n; i++) {
		if (!(all >> i & 1))
			continue;
		int rc = cow__rwmutex_lock(&stripes[i], g->write >> i & 1);
		if (rc != 0)
			Py_FatalError("cowstore: a storage lock failed");
	}
	in_ops++;
}

void
pycow_guard_unlock(struct pycow_guard *g)
{
	uint64_t all = g->read | g->write;
	int n = COW__FAULT_POINT(guard_stripes, STRIPES);

	if (forking > 0)
		return;
	in_ops--;
	for (int i = n - 1; i >= 0; i--)
		if (all >> i & 1)
			cow__rwmutex_unlock(&stripes[i]);
}

/* --- fork ---------------------------------------------------------- */

static bool
take_all(void)
{
	for (int i = 0; i < STRIPES; i++)
		if (cow__rwmutex_lock(&stripes[i], true) != 0)
			return false;
	return true;
}

static PyObject *
fork_before(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	bool ok;

	if (forking > 0) {        /* a fork handler forks: held already */
		forking++;
		Py_RETURN_NONE;
	}
	/* Code that an op runs (a __del__ that a producer's deleter triggers)
	 * forks while this thread holds the op's stripes: taking them again
	 * would wait for itself. */
	if (in_ops > 0) {
		if (PyErr_WarnEx(PyExc_RuntimeWarning, "cowstore: os.fork() "
		    "inside a cowstore operation; the child's tensors may wait "
		    "for good", 1) < 0)
			return NULL;
		Py_RETURN_NONE;
	}
	/* Without the GIL, as an op waits: a thread holding a stripe may
	 * need the GIL to finish (a producer's deleter). */
	Py_BEGIN_ALLOW_THREADS
	ok = take_all();
	Py_END_ALLOW_THREADS
	if (!ok)
		Py_FatalError("cowstore: a storage lock failed before a fork");
	forking = 1;
	Py_RETURN_NONE;
}

static PyObject *
fork_after_in_parent(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	if (forking == 0 || --forking > 0)
		Py_RETURN_NONE;
	for (int i = STRIPES - 1; i >= 0; i--)
		cow__rwmutex_unlock(&stripes[i]);
	Py_RETURN_NONE;
}

static PyObject *
fork_after_in_child(PyObject *mod, PyObject *unused)
{
	(void)mod, (void)unused;
	if (forking == 0)
		Py_RETURN_NONE;
	for (int i = 0; i < STRIPES; i++)
		if (cow__rwmutex_reinit(&stripes[i]) != 0)
			Py_FatalError("cowstore: a storage lock failed after a fork");
	/* Inside an outer fork's handlers: this (only) thread holds them. */
	if (--forking > 0 && !take_all())
		Py_FatalError("cowstore: a storage lock failed after a fork");
	Py_RETURN_NONE;
}
static PyMethodDef fork_handlers[] = {
	{ "_before_fork", fork_before, METH_NOARGS,
	  "_before_fork()\n--\n\n"
	  "takes every storage lock (os.register_at_fork's before)" },
	{ "_after_fork_in_parent", fork_after_in_parent, METH_NOARGS,
	  "_after_fork_in_parent()\n--\n\nreleases them (after_in_parent)" },
	{ "_after_fork_in_child", fork_after_in_child, METH_NOARGS,
	  "_after_fork_in_child()\n--\n\n"
	  "initialises them again (after_in_child)" },
};

static int
register_fork_handlers(void)
{
	static bool registered;
	PyObject *reg = NULL, *args = NULL, *kw = NULL, *r = NULL;
	PyObject *fn[3] = { NULL, NULL, NULL };

	if (registered)      /* a module imported again: once per process */
		return 0;
	PyObject *os = PyImport_ImportModule("os");
	if (os != NULL)
		reg = PyObject_GetAttrString(os, "register_at_fork");
	for (int i = 0; i < 3 && reg != NULL; i++)
		if ((fn[i] = PyCFunction_New(&fork_handlers[i], NULL)) == NULL)
			goto out;
	if (reg == NULL || (args = PyTuple_New(0)) == NULL ||
	    (kw = Py_BuildValue("{sOsOsO}", "before", fn[0],
	    "after_in_parent", fn[1], "after_in_child", fn[2])) == NULL)
		goto out;
	if ((r = PyObject_Call(reg, args, kw)) != NULL)
		registered = true;
out:
	for (int i = 0; i < 3; i++)
		Py_XDECREF(fn[i]);
	Py_XDECREF(r);
	Py_XDECREF(kw);
	Py_XDECREF(args);
	Py_XDECREF(reg);
	Py_XDECREF(os);
	return registered ? 0 : -1;
}

int
pycow_guard_init(void)
{
	bool handlers = COW__FAULT_POINT(fork_handlers, true);

	return handlers ? register_fork_handlers() : 0;
}
