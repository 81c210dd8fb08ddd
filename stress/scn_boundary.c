/*
 * scn_boundary.c - the boundary with memory the library does not own
 * (include/cowstore/storage.h: owned, borrowed and read-only external
 * memory, pins; dlpack.h: exports and imports, both ABIs). Threads export,
 * import, pin, clone, write and release shared tensors at random and hand
 * them to each other through a ring (ring.h), so that exports, imports,
 * writes through exported pointers, deleters and releases happen on other
 * threads than the ones that made them. The point: no export, import or pin
 * corrupts a snapshot.
 *
 * Objects in the ring:
 * - items: a tensor (a harness handle) and the model of its values;
 * - tickets: something held outside the library's tensors: a writable
 *   export whose consumer writes through dl_tensor.data, a read-only export
 *   (a snapshot) checked against the values it had when it was taken, a
 *   copy export the consumer owns, a pinned pointer (cow_tensor_pin or
 *   cow_storage_pin) that is written through until it is unpinned, and a
 *   DLPack producer that writes its own memory while it is imported.
 *
 * The model (the storage contract of storage.h, as a user keeps it):
 * - A cell is the memory of one storage: a mutex and the values the
 *   memory must hold (flat, in elements from the storage's base). An
 *   import of one of its writable exports is a view of that storage (the
 *   same sto), as the library's tensors alias exactly when they share a
 *   storage (issue 36).
 *   Every use of the cell's storages, and every write through a pointer
 *   into its memory (a consumer, a pin, a producer), takes the cell's
 *   mutex: writes are serialised against reads of ONE storage, as the
 *   contract asks. Different cells (lazy clones, snapshots, imports of
 *   read-only exports) take no common lock: that is the runtime's job.
 * - A sto is one library storage: its harness handles (tensors of items,
 *   pin and export tickets), and who pins it. Pins are counted as sure (held) or
 *   in flux (being dropped, perhaps on another thread without the mutex),
 *   so that the harness knows when a lazy clone must share the data (no
 *   pin), must copy (a sure pin: counted, the library's pinned_clones must
 *   reach the count), or may do either.
 * - A mem is memory the harness made and gave to the library: a DLPack
 *   producer's buffer (its deleter counted), borrowed memory (no deleter;
 *   the harness frees it when no storage can reference it), a PROT_READ
 *   mapping (unmapped by its deleter).
 *
 * Invariants, checked on every hop of every object:
 * - every tensor's values match its model, read through its strides, and
 *   its layout (sizes, strides, offset) is the model's; a snapshot (a lazy
 *   clone, frozen or not, or a read-only export) keeps the bytes it had
 *   when it was taken, whatever was exported, pinned or written since;
 * - a storage that references harness memory finds its deleter not yet
 *   run, and read-only memory (a read-only import, a mapping, a read-only
 *   export's memory) unchanged (checksum);
 * - a write through a storage that may not write its memory (read-only
 *   memory, or borrowed memory it was not created over) copies: its data
 *   leaves that memory (and a mapping never faults);
 * - a lazy clone or read-only export of a storage nobody pins shares its
 *   data (O(1)); imports alias the producer's pointer, writable ones are
 *   pinned for life, read-only ones are read-only; an import of one of our
 *   own exports is a tensor on the storage the export holds (the exported
 *   storage itself for a writable export, whose pin the import drops; the
 *   snapshot or copy otherwise), not pinned;
 * - a writable producer's deleter runs exactly when its import's last
 *   storage is released; every deleter runs once; read-only memory is
 *   unchanged when its deleter runs; borrowed memory holds exactly what was
 *   written through the storage made over it when it is given back.
 * After the drain: every object, cell, storage and harness buffer is gone,
 * every allocation is back, the library's external_copies moved by
 * exactly the writes that had to copy, and its pinned_clones by at least
 * the clones of surely pinned storages and at most those plus the clones
 * of storages whose pin was being dropped.
 *
 * The scenario checks the property, not the mechanism, where the two
 * differ: it never asks whether a storage with a writable export or a pin
 * is pinned (cow_storage_is_pinned), nor fails a clone of one at once
 * for sharing its data. A missing pin must show as what it breaks: a
 * snapshot that changes (negative control (g), docs/stress.md), a data
 * race under TSan, and a pinned_clones count short of the expected one.
 *
 * Items retire after BD_HOPS hand-offs, tickets after BD_TICKET_HOPS. The
 * drain first finishes every ticket (a consumer, pin or producer writes
 * once more before it lets go), then checks and releases every item: a
 * snapshot that shares bytes someone can still write is then caught even
 * when the writer had not written since the snapshot was taken.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cowstore/dlpack.h>
#include <cowstore/ops.h>
#include <cowstore/tensor.h>

/* The DLPack structs (the public header only declares them), as the
 * library's unit tests see them; tests/interop/ checks them against the
 * specification. */
#include "interop/dlpack_abi.h"

#include "harness.h"
#include "handoff.h"
#include "ring.h"
#include "strided_walk.h"

#define BD_MAX_NDIM 2
#define BD_HOPS 12        /* an item retires after this many hand-offs */
#define BD_TICKET_HOPS 6  /* a ticket finishes after this many */
#define BD_STEPS 8        /* objects each thread handles per round */

struct bd_state;

/* Positions of a tensor's elements in its cell's flat model. */
struct bd_view {
	int ndim;
	int64_t sizes[BD_MAX_NDIM];
	int64_t strides[BD_MAX_NDIM];
	int64_t offset;
};

/* ---- harness memory ------------------------------------------------------ */

enum bd_mem_kind {
	BD_MEM_PRODUCER,  /* a DLPack producer's buffer */
	BD_MEM_BORROWED,  /* borrowed: no deleter */
	BD_MEM_MAPPED     /* a PROT_READ mapping with a deleter */
};

struct bd_mem {
	/* Read-only after init. */
	enum bd_mem_kind kind;
	char what[160];         /* for messages */
	unsigned char *base;    /* the allocation (mapping) */
	size_t nbytes;          /* its size */
	size_t lead;            /* bytes before the tensor's first element */
	bool read_only;         /* nobody may write it while referenced */
	bool writable_import;   /* a producer imported writable */
	uint64_t sum;           /* checksum: read-only: all; else the lead */
	/* Borrowed: the bytes the storage made over it wrote last.
	 * Synchronization: that storage's cell lock; read by the last
	 * data_put (ordered by data_refs). */
	unsigned char *expect;
	/* Synchronization: atomic. */
	_Atomic unsigned calls;  /* deleter calls */
	_Atomic int data_refs;   /* until the buffer is given back */
	_Atomic int rec_refs;    /* until this record is freed */
	/* The managed tensor handed over (producer). */
	struct DLManagedTensor legacy;
	struct DLManagedTensorVersioned versioned;
	int64_t shape[BD_MAX_NDIM], strides[BD_MAX_NDIM];
	struct stress_run *run;
	struct bd_state *st;
};

/* ---- cells, storages, objects -------------------------------------------- */

struct bd_sto;

struct bd_cell {
	pthread_mutex_t lock;
	_Atomic int refs;        /* stos and producer tickets */
	/* Read-only after init. */
	cow_dtype_t dtype;
	int64_t n;               /* elements in flat */
	bool snapshot;           /* made by a lazy clone */
	bool frozen;             /* a snapshot nothing writes */
	char origin[160];        /* how it was made, for messages */
	struct bd_mem *mem;      /* one rec ref (borrowed: a data ref too) */
	/* Synchronization: lock. */
	int64_t *flat;           /* the values its memory must hold */
	struct bd_sto *home;     /* the storage made over borrowed memory */
};

/* One library storage. Synchronization: its cell's lock. */
struct bd_sto {
	struct bd_cell *cell;    /* one ref; read-only after init */
	int handles;             /* harness handles keeping it alive */
	int def_exp, def_pin;    /* sure pins: writable exports, pins */
	int flux;                /* pins being dropped */
	bool for_life;           /* COW_STORAGE_NOT_SHAREABLE */
	bool home;               /* made over borrowed memory */
	bool exact;              /* the import of a writable producer */
	bool foreign;            /* its next write must copy (external) */
	bool in_mem;             /* its data lies in cell->mem */
	int64_t sbase;           /* its base in the cell's flat model */
};

enum bd_kind {
	BD_ITEM,
	BD_WEXPORT,   /* a writable export and its consumer */
	BD_REXPORT,   /* a read-only export (a snapshot) */
	BD_CEXPORT,   /* a copy export */
	BD_PIN,       /* a pinned pointer */
	BD_PRODUCER   /* a producer writing its imported memory */
};

struct bd_obj {
	enum bd_kind kind;
	unsigned hops;
};

struct bd_item {
	struct bd_obj o;
	cow_tensor_t *t;
	struct bd_sto *s;        /* one handle */
	struct bd_view v;
};

struct bd_ticket {
	struct bd_obj o;
	cow_dtype_t dtype;
	struct bd_view v;        /* the pointer's elements, flat positions
	                            (exports of values: offset 0) */
	/* WEXPORT, PIN: one handle on s, and one pin of it. */
	struct bd_sto *s;
	cow_storage_t *sto;      /* WEXPORT: s's library storage */
	/* PRODUCER: a ref on the cell and a data ref on the memory.
	 * REXPORT: a rec ref (borrowed: a data ref too) on the memory its
	 * snapshot may share, or NULL. */
	struct bd_cell *cell;
	struct bd_mem *mem;
	/* REXPORT: the snapshot shares memory its first write may not
	 * write (read-only, or borrowed from another storage); the offset
	 * of its element 0 in its storage (a lazy clone keeps the layout;
	 * CEXPORT: 0, a contiguous copy). */
	bool foreign;
	int64_t held_offset;
	/* WEXPORT, PIN, PRODUCER: the address of flat position ptr_pos. */
	unsigned char *ptr;
	int64_t ptr_pos;
	/* Exports. */
	bool versioned;
	unsigned flags;          /* COW_DLPACK_* */
	struct DLManagedTensor *ml;
	struct DLManagedTensorVersioned *mv;
	int64_t *vals;           /* REXPORT, CEXPORT: values, row-major */
	char origin[160];
	/* PIN. */
	cow_tensor_t *t;         /* its own reference */
	bool storage_pin;
};

struct bd_state {
	struct stress_handoff h; /* first: stress_handoff_state_new */
	cow_stats_t before;
	/* Live counts. Synchronization: atomic. */
	_Atomic int64_t objs, cells, stos, mems;
	/* Expectations for the library's counters. */
	_Atomic uint64_t exp_external, pin_sure, pin_maybe;
	/* The report. */
	_Atomic uint64_t n_handoff, n_wexport, n_rexport, n_cexport;
	_Atomic uint64_t n_reimport, n_producer, n_borrowed, n_mapped;
	_Atomic uint64_t n_pin, n_snap_pinned, n_ebusy;
};

/* ---- values -------------------------------------------------------------- */

static int64_t
bd_get(const unsigned char *p, cow_dtype_t dt)
{
	if (dt == COW_DTYPE_INT32) {
		int32_t x;

		memcpy(&x, p, sizeof x);
		return x;
	} else {
		double x;

		memcpy(&x, p, sizeof x);
		return (int64_t)x;
	}
}

static void
bd_put(unsigned char *p, cow_dtype_t dt, int64_t v)
{
	if (dt == COW_DTYPE_INT32) {
		int32_t x = (int32_t)v;

		memcpy(p, &x, sizeof x);
	} else {
		double x = (double)v;

		memcpy(p, &x, sizeof x);
	}
}

static void *
bd_alloc(size_t n)
{
	void *p = calloc(1, n > 0 ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

/* ---- views ----------------------------------------------------------------- */

static int64_t
bd_numel(const struct bd_view *v)
{
	int64_t n = 1;

	for (int d = 0; d < v->ndim; d++)
		n *= v->sizes[d];
	return n;
}

/* One past the largest flat position @v reaches. */
static int64_t
bd_extent(const struct bd_view *v)
{
	int64_t e = v->offset;

	for (int d = 0; d < v->ndim; d++)
		e += (v->sizes[d] - 1) * v->strides[d];
	return e + 1;
}

static void
bd_view_dense(struct bd_view *v, int ndim, const int64_t *sizes,
    bool col_major)
{
	v->ndim = ndim;
	v->offset = 0;
	if (ndim == 1) {
		v->sizes[0] = sizes[0];
		v->strides[0] = 1;
	} else {
		v->sizes[0] = sizes[0];
		v->sizes[1] = sizes[1];
		v->strides[0] = col_major ? 1 : sizes[1];
		v->strides[1] = col_major ? sizes[0] : 1;
	}
}

/* Visit the elements of @v in row-major order: k (their index) and pos
 * (their flat position). */
#define BD_FOREACH(v, k, pos, body)                                         \
	STRIDED_FOREACH(v, bd_numel(v), k, pos, body)

enum bd_vop { BD_NARROW, BD_SLICE, BD_TRANSPOSE, BD_SELECT };

struct bd_vspec {
	enum bd_vop op;
	int dim;
	int64_t start, len, end, step, index;
};

static const char *
bd_vop_name(enum bd_vop op)
{
	static const char *const names[] = {"narrow", "slice", "transpose",
	    "select"};

	return names[op];
}

/* A random view of @v with at least one element (and one dimension). */
static void
bd_pick_view(struct stress_rng *rng, const struct bd_view *v,
    bool only_narrow, struct bd_vspec *s)
{
	int64_t size;

	memset(s, 0, sizeof *s);
	s->op = only_narrow ? BD_NARROW :
	    (enum bd_vop)stress_rng_below(rng, v->ndim == 2 ? 4 : 2);
	s->dim = (int)stress_rng_below(rng, (uint64_t)v->ndim);
	size = v->sizes[s->dim];
	switch (s->op) {
	case BD_NARROW:
		s->start = (int64_t)stress_rng_below(rng, (uint64_t)size);
		s->len = 1 + (int64_t)stress_rng_below(rng,
		    (uint64_t)(size - s->start));
		break;
	case BD_SLICE:
		s->start = (int64_t)stress_rng_below(rng, (uint64_t)size);
		s->end = s->start + 1 + (int64_t)stress_rng_below(rng,
		    (uint64_t)(size - s->start));
		s->step = 1 + (int64_t)stress_rng_below(rng, 3);
		break;
	case BD_TRANSPOSE:
		break;
	case BD_SELECT:
		s->index = (int64_t)stress_rng_below(rng, (uint64_t)size);
		break;
	}
}

/* The view the library computes, by our own index math. */
static void
bd_view_apply(struct bd_view *v, const struct bd_vspec *s)
{
	int d = s->dim;
	int64_t t;

	switch (s->op) {
	case BD_NARROW:
		v->offset += s->start * v->strides[d];
		v->sizes[d] = s->len;
		break;
	case BD_SLICE:
		v->offset += s->start * v->strides[d];
		v->sizes[d] = (s->end - s->start + s->step - 1) / s->step;
		/* The library keeps the stride of a one-element slice. */
		if (v->sizes[d] > 1)
			v->strides[d] *= s->step;
		break;
	case BD_TRANSPOSE:
		t = v->sizes[0];
		v->sizes[0] = v->sizes[1];
		v->sizes[1] = t;
		t = v->strides[0];
		v->strides[0] = v->strides[1];
		v->strides[1] = t;
		break;
	case BD_SELECT:
		v->offset += s->index * v->strides[d];
		if (d == 0) {
			v->sizes[0] = v->sizes[1];
			v->strides[0] = v->strides[1];
		}
		v->ndim = 1;
		break;
	}
}

static cow_status_t
bd_view_tensor(cow_tensor_t *t, const struct bd_vspec *s, cow_tensor_t **out)
{
	switch (s->op) {
	case BD_NARROW:
		return cow_tensor_narrow(t, s->dim, s->start, s->len, out);
	case BD_SLICE:
		return cow_tensor_slice(t, s->dim, s->start, s->end, s->step,
		    out);
	case BD_TRANSPOSE:
		return cow_tensor_transpose(t, 0, 1, out);
	default:
		return cow_tensor_select(t, s->dim, s->index, out);
	}
}

/* The values of @v in @flat, row-major. */
static int64_t *
bd_gather(const struct bd_view *v, const int64_t *flat)
{
	int64_t *out = bd_alloc((size_t)bd_numel(v) * sizeof *out);

	BD_FOREACH(v, k, pos, out[k] = flat[pos]);
	return out;
}

/* ---- harness memory ------------------------------------------------------ */

static bool
bd_in(const struct bd_mem *m, const void *p)
{
	const unsigned char *c = p;

	return m != NULL && c != NULL && c >= m->base &&
	    c < m->base + m->nbytes;
}

static struct bd_mem *
bd_mem_new(struct stress_run *run, struct bd_state *st,
    enum bd_mem_kind kind)
{
	struct bd_mem *m = bd_alloc(sizeof *m);

	m->kind = kind;
	m->run = run;
	m->st = st;
	atomic_init(&m->calls, 0);
	atomic_init(&m->data_refs, 0);
	atomic_init(&m->rec_refs, 0);
	atomic_fetch_add(&st->mems, 1);
	return m;
}

static void
bd_mem_rec_get(struct bd_mem *m)
{
	atomic_fetch_add(&m->rec_refs, 1);
}

static void
bd_mem_rec_put(struct bd_mem *m)
{
	struct bd_state *st = m->st;

	if (atomic_fetch_sub(&m->rec_refs, 1) != 1)
		return;
	free(m->expect);
	free(m);
	atomic_fetch_sub(&st->mems, 1);
}

/* A reference on @m for a cell or a ticket whose storage may share it:
 * borrowed memory must stay allocated while a storage may reference it. */
static void
bd_mem_hold(struct bd_mem *m)
{
	if (m == NULL)
		return;
	bd_mem_rec_get(m);
	if (m->kind == BD_MEM_BORROWED)
		atomic_fetch_add(&m->data_refs, 1);
}

static void bd_mem_data_put(struct bd_mem *m);

static void
bd_mem_unhold(struct bd_mem *m)
{
	if (m == NULL)
		return;
	if (m->kind == BD_MEM_BORROWED)
		bd_mem_data_put(m);
	bd_mem_rec_put(m);
}

/* The buffer is given back: the last of its data references. */
static void
bd_mem_data_put(struct bd_mem *m)
{
	struct stress_run *run = m->run;

	if (atomic_fetch_sub(&m->data_refs, 1) != 1)
		return;
	if (m->kind == BD_MEM_BORROWED) {
		size_t bad = stress_first_diff(m->base, m->expect, m->nbytes);

		stress_check(run, bad == m->nbytes, "%s changed where only "
		    "the storage made over it may write: byte %zu is 0x%02x, "
		    "expected 0x%02x (the library wrote memory it does not "
		    "own)", m->what, bad, bad < m->nbytes ? m->base[bad] : 0,
		    bad < m->nbytes ? m->expect[bad] : 0);
	}
	if (m->kind == BD_MEM_MAPPED) {
		munmap(m->base, m->nbytes);
	} else {
		memset(m->base, STRESS_POISON, m->nbytes);
		free(m->base);
	}
	stress_ext_sub(m->nbytes);
	bd_mem_rec_put(m);
}

/* A deleter call for @m (the library lets go of it). */
static void
bd_mem_deleted(struct bd_mem *m)
{
	struct stress_run *run = m->run;
	unsigned before = atomic_fetch_add(&m->calls, 1);

	if (!stress_check(run, before == 0, "the deleter of %s ran again "
	    "(call %u; it must run exactly once)", m->what, before + 1))
		return; /* Never give it back twice: the report is the point. */
	if (m->read_only)
		stress_check(run, stress_checksum(m->base, m->nbytes) == m->sum,
		    "%s (read-only memory) changed while the library held it "
		    "(checked by its deleter)", m->what);
	else
		stress_check(run, stress_checksum(m->base, m->lead) == m->sum,
		    "%s: the %zu bytes before the tensor changed (outside "
		    "every storage)", m->what, m->lead);
	bd_mem_data_put(m);
}

static void
bd_producer_deleter_l(struct DLManagedTensor *self)
{
	bd_mem_deleted(self->manager_ctx);
}

static void
bd_producer_deleter_v(struct DLManagedTensorVersioned *self)
{
	bd_mem_deleted(self->manager_ctx);
}

static void
bd_mapped_deleter(void *data, size_t nbytes, void *ctx)
{
	struct bd_mem *m = ctx;

	stress_check(m->run, data == m->base && nbytes <= m->nbytes,
	    "the deleter of %s got %p, %zu bytes (expected %p, at most %zu)",
	    m->what, data, nbytes, (void *)m->base, m->nbytes);
	bd_mem_deleted(m);
}

/* ---- cells and storages ------------------------------------------------- */

static struct bd_cell *
bd_cell_new(struct bd_state *st, cow_dtype_t dt, int64_t n)
{
	struct bd_cell *c = bd_alloc(sizeof *c);

	if (pthread_mutex_init(&c->lock, NULL) != 0)
		abort();
	atomic_init(&c->refs, 0);
	c->dtype = dt;
	c->n = n;
	c->flat = bd_alloc((size_t)n * sizeof *c->flat);
	atomic_fetch_add(&st->cells, 1);
	return c;
}

/* A cell of n random values (0..999), also written as dtype dt at dst. */
static struct bd_cell *
bd_cell_random(struct bd_state *st, cow_dtype_t dt, int64_t n,
    unsigned char *dst, struct stress_rng *rng)
{
	struct bd_cell *c = bd_cell_new(st, dt, n);
	size_t es = cow_dtype_size(dt);

	for (int64_t i = 0; i < n; i++) {
		c->flat[i] = (int64_t)stress_rng_below(rng, 1000);
		bd_put(dst + (size_t)i * es, dt, c->flat[i]);
	}
	return c;
}

static void
bd_cell_get(struct bd_cell *c)
{
	atomic_fetch_add(&c->refs, 1);
}

static void
bd_cell_put(struct bd_state *st, struct bd_cell *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&c->lock);
	bd_mem_unhold(c->mem);
	free(c->flat);
	free(c);
	atomic_fetch_sub(&st->cells, 1);
}

static struct bd_sto *
bd_sto_new(struct bd_state *st, struct bd_cell *c, int64_t sbase)
{
	struct bd_sto *s = bd_alloc(sizeof *s);

	s->cell = c;
	s->handles = 1;
	s->sbase = sbase;
	bd_cell_get(c);
	atomic_fetch_add(&st->stos, 1);
	return s;
}

enum bd_pinned { BD_UNPINNED, BD_PINNED, BD_MAYBE };

/* Whether @s is pinned now (cell lock held). */
static enum bd_pinned
bd_pin_state(const struct bd_sto *s)
{
	if (s->for_life || s->def_exp > 0 || s->def_pin > 0)
		return BD_PINNED;
	if (s->flux > 0)
		return BD_MAYBE;
	return BD_UNPINNED;
}

/* "pinned by 1 writable export and 2 pins", for messages. */
static void
bd_pin_desc(const struct bd_sto *s, char *buf, size_t len)
{
	switch (bd_pin_state(s)) {
	case BD_UNPINNED:
		snprintf(buf, len, "not pinned");
		break;
	case BD_MAYBE:
		snprintf(buf, len, "being unpinned");
		break;
	case BD_PINNED:
		if (s->for_life)
			snprintf(buf, len, "pinned for life");
		else
			snprintf(buf, len, "pinned by %d writable %s and %d "
			    "%s", s->def_exp, stress_plural((uint64_t)s->def_exp,
			    "export", "exports"), s->def_pin,
			    stress_plural((uint64_t)s->def_pin, "pin", "pins"));
		break;
	}
}

/* After a write through @c's memory (cell lock held): the bytes of
 * borrowed memory are what the storage made over it holds while that
 * storage still writes it in place. */
static void
bd_cell_written(struct bd_cell *c)
{
	size_t es = cow_dtype_size(c->dtype);

	if (c->home == NULL || !c->home->in_mem)
		return;
	for (int64_t p = 0; p < c->n; p++)
		bd_put(c->mem->expect + (size_t)p * es, c->dtype, c->flat[p]);
}

/* ---- objects ------------------------------------------------------------- */

static struct bd_item *
bd_item_new(struct bd_state *st, cow_tensor_t *t, struct bd_sto *s,
    const struct bd_view *v)
{
	struct bd_item *it = bd_alloc(sizeof *it);

	it->o.kind = BD_ITEM;
	it->t = t;
	it->s = s;
	it->v = *v;
	atomic_fetch_add(&st->objs, 1);
	return it;
}

static struct bd_ticket *
bd_ticket_new(struct bd_state *st, enum bd_kind kind, cow_dtype_t dt,
    const struct bd_view *v)
{
	struct bd_ticket *tk = bd_alloc(sizeof *tk);

	tk->o.kind = kind;
	tk->dtype = dt;
	tk->v = *v;
	atomic_fetch_add(&st->objs, 1);
	return tk;
}

static void
bd_ticket_free(struct bd_state *st, struct bd_ticket *tk)
{
	free(tk->vals);
	free(tk);
	atomic_fetch_sub(&st->objs, 1);
}

/* ---- checks ---------------------------------------------------------------- */

/* @it's tensor against its model (cell lock held). */
static bool
bd_verify(struct stress_run *run, struct bd_item *it, const char *when)
{
	const cow_tensor_t *t = it->t;
	struct bd_sto *s = it->s;
	struct bd_cell *c = s->cell;
	const struct bd_view *v = &it->v;
	const cow_storage_t *sto = cow_tensor_storage(t);
	const unsigned char *base = cow_tensor_const_data(t);
	size_t es = cow_dtype_size(c->dtype);
	bool ok = cow_tensor_ndim(t) == v->ndim &&
	    cow_tensor_dtype(t) == c->dtype &&
	    cow_tensor_offset(t) + s->sbase == v->offset;
	int64_t bad = -1, got = 0, want = 0;
	struct bd_mem *m = c->mem;

	for (int d = 0; ok && d < v->ndim; d++)
		ok = cow_tensor_sizes(t)[d] == v->sizes[d] &&
		    cow_tensor_strides(t)[d] == v->strides[d];
	if (!stress_check(run, ok, "%s: the layout of %s differs from its "
	    "model (ndim %d, offset %" PRId64 " + base %" PRId64 ")", when,
	    c->origin, cow_tensor_ndim(t), cow_tensor_offset(t), s->sbase))
		return false;
	BD_FOREACH(v, k, pos, {
		int64_t x = bd_get(base + (size_t)(pos - v->offset) * es,
		    c->dtype);

		if (bad < 0 && x != c->flat[pos]) {
			bad = k;
			got = x;
			want = c->flat[pos];
		}
	});
	if (bad >= 0) {
		if (c->snapshot)
			stress_check(run, false, "%s: a snapshot (%s) changed: "
			    "element %" PRId64 " is %" PRId64 ", expected %"
			    PRId64, when, c->origin, bad, got, want);
		else
			stress_check(run, false, "%s: %s differs from its "
			    "model: element %" PRId64 " is %" PRId64
			    ", expected %" PRId64, when, c->origin, bad, got,
			    want);
		return false;
	}
	stress_checks_passed(run, 1);
	if (m != NULL && s->in_mem) {
		const void *d = cow_storage_const_data(sto);

		stress_check(run, bd_in(m, d), "%s: %s should still reference "
		    "%s but its data is at %p", when, c->origin, m->what, d);
		if (m->kind == BD_MEM_PRODUCER || m->kind == BD_MEM_MAPPED)
			stress_check(run, atomic_load(&m->calls) == 0,
			    "%s: the deleter of %s ran while a storage still "
			    "references its memory (%s)", when, m->what,
			    c->origin);
		if (m->read_only) {
			stress_check(run, stress_checksum(m->base, m->nbytes) ==
			    m->sum, "%s: %s changed while a storage shared it "
			    "(read-only memory)", when, m->what);
			stress_check(run, cow_storage_is_read_only(sto),
			    "%s: a storage over %s is not read-only", when,
			    m->what);
		}
	}
	if (bd_pin_state(s) == BD_UNPINNED)
		stress_check(run, !cow_storage_is_pinned(sto), "%s: a storage "
		    "nobody pins is pinned (%s)", when, c->origin);
	return true;
}

/* After a successful write access to @s through @t (cell lock held): the
 * storage is private, a write that had to copy left the memory it may
 * not write, and whether @s still references its cell's memory. */
static void
bd_write_done(struct stress_run *run, struct bd_state *st,
    const cow_tensor_t *t, struct bd_sto *s, bool foreign)
{
	const cow_storage_t *sto = cow_tensor_storage(t);
	const void *d = cow_storage_const_data(sto);
	struct bd_mem *m = s->cell->mem;

	stress_check(run, !cow_storage_is_cow(sto), "a storage is still "
	    "copy-on-write after a write");
	if (foreign) {
		atomic_fetch_add_explicit(&st->exp_external, 1,
		    memory_order_relaxed);
		if (s->in_mem)
			stress_check(run, !bd_in(m, d), "a write through a "
			    "storage over %s (which it may not write) did "
			    "not copy", m->what);
		s->foreign = false;
	}
	if (s->in_mem)
		s->in_mem = bd_in(m, d);
}

/* ---- dropping handles ------------------------------------------------------ */

enum bd_op {
	BD_OP_RELEASE,        /* cow_tensor_release */
	BD_OP_UNPIN_TENSOR,   /* cow_tensor_unpin, then release */
	BD_OP_UNPIN_STORAGE,  /* cow_storage_unpin, then release */
	BD_OP_DELETER         /* an export's deleter */
};

struct bd_drop {
	enum bd_op op;
	cow_tensor_t *t;
	struct DLManagedTensor *ml;
	struct DLManagedTensorVersioned *mv;
};

static void
bd_drop_run(struct stress_run *run, const struct bd_drop *d)
{
	switch (d->op) {
	case BD_OP_RELEASE:
		cow_tensor_release(d->t);
		break;
	case BD_OP_UNPIN_TENSOR:
		stress_check(run, cow_tensor_unpin(d->t) == COW_OK,
		    "cow_tensor_unpin: %s", cow_last_error());
		cow_tensor_release(d->t);
		break;
	case BD_OP_UNPIN_STORAGE:
		stress_check(run, cow_storage_unpin(cow_tensor_storage(d->t)) ==
		    COW_OK, "cow_storage_unpin: %s", cow_last_error());
		cow_tensor_release(d->t);
		break;
	case BD_OP_DELETER:
		if (d->mv != NULL)
			d->mv->deleter(d->mv);
		else
			d->ml->deleter(d->ml);
		break;
	}
}

/* A storage is gone: its writable producer's deleter ran exactly then. */
static void
bd_sto_dead(struct stress_run *run, struct bd_state *st, struct bd_sto *s)
{
	struct bd_cell *c = s->cell;

	if (s->exact)
		stress_check(run, atomic_load(&c->mem->calls) == 1,
		    "the deleter of %s ran %u times by the time its import's "
		    "last storage was released (expected once, at that "
		    "release)", c->mem->what, atomic_load(&c->mem->calls));
	free(s);
	atomic_fetch_sub(&st->stos, 1);
	bd_cell_put(st, c);
}

/*
 * Drop one harness handle on @s: @d runs the library call. @pin: the
 * handle holds a pin of @s (1: a writable export, 2: a cow_*_pin).
 * @ordered: the call runs under the cell's lock; otherwise without it, at
 * any moment against the other uses of the storage (the contract allows
 * releases and unpins from any thread). While it runs, the pin it drops
 * is in flux. The handle count falls only after the call returned, so
 * whoever takes it to zero knows the storage is gone.
 */
static void
bd_handle_drop(struct stress_run *run, struct bd_state *st, struct bd_sto *s,
    int pin, const struct bd_drop *d, bool ordered, struct stress_rng *rng)
{
	struct bd_cell *c = s->cell;
	bool dead;

	pthread_mutex_lock(&c->lock);
	if (pin == 1)
		s->def_exp--;
	else if (pin == 2)
		s->def_pin--;
	if (pin != 0)
		s->flux++;
	if (ordered) {
		bd_drop_run(run, d);
	} else {
		pthread_mutex_unlock(&c->lock);
		stress_perturb(rng);
		bd_drop_run(run, d);
		pthread_mutex_lock(&c->lock);
	}
	if (pin != 0)
		s->flux--;
	dead = --s->handles == 0;
	if (dead && c->home == s)
		c->home = NULL;
	pthread_mutex_unlock(&c->lock);
	if (dead)
		bd_sto_dead(run, st, s);
}

/* ---- creation ---------------------------------------------------------------- */

/* A random dtype and shape of about --size bytes (at least 8 elements). */
static cow_dtype_t
bd_pick_shape(struct stress_run *run, struct stress_rng *rng, int *ndim,
    int64_t *sizes)
{
	int64_t n = (int64_t)(run->opt->size / 8);

	if (n < 8)
		n = 8;
	*ndim = 1 + (int)stress_rng_below(rng, 2);
	if (*ndim == 1) {
		sizes[0] = n;
	} else {
		sizes[0] = 2 + (int64_t)stress_rng_below(rng, 15);
		sizes[1] = n / sizes[0] > 0 ? n / sizes[0] : 1;
	}
	return stress_rng_below(rng, 2) ? COW_DTYPE_INT32 : COW_DTYPE_FLOAT64;
}

/* A fresh tensor from the harness allocator. */
static struct bd_item *
bd_new_fresh(struct stress_run *run, struct bd_state *st,
    struct stress_rng *rng)
{
	int ndim;
	int64_t sizes[BD_MAX_NDIM] = {0};
	cow_dtype_t dt = bd_pick_shape(run, rng, &ndim, sizes);
	struct bd_view v;
	struct bd_cell *c;
	unsigned char *data;
	size_t es = cow_dtype_size(dt);
	cow_tensor_t *t;

	bd_view_dense(&v, ndim, sizes, false);
	data = bd_alloc((size_t)bd_numel(&v) * es);
	c = bd_cell_random(st, dt, bd_numel(&v), data, rng);
	snprintf(c->origin, sizeof c->origin, "a fresh %s tensor",
	    cow_dtype_name(dt));
	if (!stress_check(run, cow_tensor_from_data(dt, ndim, sizes, data,
	    stress_allocator(), &t) == COW_OK, "cow_tensor_from_data: %s",
	    cow_last_error()))
		abort();
	free(data);
	return bd_item_new(st, t, bd_sto_new(st, c, 0), &v);
}

struct bd_flavour {
	const char *name;
	bool versioned;
	uint64_t flags;         /* the producer's (versioned) */
	unsigned import_flags;  /* the consumer's */
};

static const struct bd_flavour bd_flavours[] = {
	{"writable versioned", true, 0, 0},
	{"writable legacy", false, 0, 0},
	{"read-only versioned", true, COW__DL_FLAG_READ_ONLY, 0},
	{"versioned imported read-only", true, 0, COW_DLPACK_READ_ONLY},
	{"legacy imported read-only", false, 0, COW_DLPACK_READ_ONLY},
	{"copied versioned", true, COW__DL_FLAG_IS_COPIED, 0},
	{"copied read-only versioned", true,
	    COW__DL_FLAG_IS_COPIED | COW__DL_FLAG_READ_ONLY, 0},
};
#define BD_NFLAVOURS (sizeof bd_flavours / sizeof bd_flavours[0])

static void bd_hand_off(struct stress_run *run, struct bd_state *st,
    struct bd_obj *o, struct stress_rng *rng);

/* A DLPack producer's tensor, imported. A writable producer also gets a
 * ticket: it keeps writing its memory while it is imported. */
static struct bd_item *
bd_new_producer(struct stress_run *run, struct bd_state *st,
    struct stress_rng *rng)
{
	const struct bd_flavour *f =
	    &bd_flavours[stress_rng_below(rng, BD_NFLAVOURS)];
	int ndim;
	int64_t sizes[BD_MAX_NDIM] = {0};
	cow_dtype_t dt = bd_pick_shape(run, rng, &ndim, sizes);
	size_t es = cow_dtype_size(dt);
	bool col = ndim == 2 && stress_rng_below(rng, 2) == 0;
	bool ro = (f->flags & COW__DL_FLAG_READ_ONLY) ||
	    (f->import_flags & COW_DLPACK_READ_ONLY);
	bool copied = (f->flags & COW__DL_FLAG_IS_COPIED) != 0;
	bool use_offset = stress_rng_below(rng, 2) == 0;
	bool null_strides = !col && stress_rng_below(rng, 3) == 0;
	struct bd_mem *m = bd_mem_new(run, st, BD_MEM_PRODUCER);
	struct cow__dl_tensor dl;
	struct bd_view v;
	struct bd_cell *c;
	struct bd_sto *s;
	cow_tensor_t *t;
	cow_status_t rc;
	void *p;
	static const int32_t devices[] = {COW__DL_CPU, COW__DL_CPU,
	    COW__DL_CUDA_HOST, COW__DL_ROCM_HOST};

	bd_view_dense(&v, ndim, sizes, col);
	snprintf(m->what, sizeof m->what, "the memory of a %s DLPack producer",
	    f->name);
	m->lead = es * (size_t)stress_rng_below(rng, 4);
	m->nbytes = m->lead + (size_t)bd_numel(&v) * es;
	m->read_only = ro;
	m->writable_import = !ro && !copied;
	if (posix_memalign(&p, 64, m->nbytes) != 0)
		abort();
	m->base = p;
	stress_ext_add(m->nbytes);
	stress_pattern_fill(m->base, m->lead, stress_rng_next(rng));
	c = bd_cell_random(st, dt, bd_numel(&v), m->base + m->lead, rng);
	m->sum = stress_checksum(m->base, ro ? m->nbytes : m->lead);
	for (int d = 0; d < ndim; d++) {
		m->shape[d] = v.sizes[d];
		m->strides[d] = v.strides[d];
	}
	dl = (struct cow__dl_tensor){
		use_offset ? (void *)m->base : (void *)(m->base + m->lead),
		{devices[stress_rng_below(rng, 4)], 0}, ndim,
		{dt == COW_DTYPE_INT32 ? COW__DL_INT : COW__DL_FLOAT,
		    (uint8_t)(es * 8), 1},
		m->shape, null_strides ? NULL : m->strides,
		use_offset ? m->lead : 0
	};
	/* Data, deleter and counts are ready before the hand-over: the
	 * deleter may run on any thread once the import returns. */
	atomic_store(&m->data_refs, m->writable_import ? 2 : 1);
	atomic_store(&m->rec_refs, 1);
	if (f->versioned) {
		m->versioned = (struct DLManagedTensorVersioned){
			{1, (uint32_t)stress_rng_below(rng, null_strides ? 2 :
			    4)}, m, bd_producer_deleter_v, f->flags, dl};
		rc = cow_tensor_from_dlpack_versioned(&m->versioned,
		    f->import_flags, &t);
	} else {
		m->legacy = (struct DLManagedTensor){dl, m,
		    bd_producer_deleter_l};
		rc = cow_tensor_from_dlpack(&m->legacy, f->import_flags, &t);
	}
	if (!stress_check(run, rc == COW_OK, "import of %s: %s", m->what,
	    cow_last_error()))
		abort(); /* Not a race: the library refused. */
	atomic_fetch_add_explicit(&st->n_producer, 1, memory_order_relaxed);
	snprintf(c->origin, sizeof c->origin, "a %s DLPack import", f->name);
	c->mem = m;
	bd_mem_hold(m);
	s = bd_sto_new(st, c, 0);
	s->for_life = m->writable_import;
	s->exact = m->writable_import;
	s->foreign = ro;
	s->in_mem = true;
	stress_check(run, cow_tensor_const_data(t) ==
	    (const void *)(m->base + m->lead), "an import does not alias the "
	    "producer's memory (%s)", m->what);
	stress_check(run, cow_storage_is_pinned(cow_tensor_storage(t)) ==
	    m->writable_import, "a %s import %s pinned", f->name,
	    m->writable_import ? "is not" : "is");
	stress_check(run, cow_storage_is_read_only(cow_tensor_storage(t)) ==
	    ro, "a %s import %s read-only", f->name, ro ? "is not" : "is");
	if (m->writable_import) {
		struct bd_ticket *tk = bd_ticket_new(st, BD_PRODUCER, dt, &v);

		tk->cell = c;
		bd_cell_get(c);
		tk->mem = m; /* the second data ref */
		tk->ptr = m->base + m->lead;
		tk->ptr_pos = 0;
		bd_hand_off(run, st, &tk->o, rng);
	}
	return bd_item_new(st, t, s, &v);
}

/* A tensor over borrowed memory (no deleter): the harness keeps it, and
 * frees it once no storage can reference it. */
static struct bd_item *
bd_new_borrowed(struct stress_run *run, struct bd_state *st,
    struct stress_rng *rng)
{
	int ndim;
	int64_t sizes[BD_MAX_NDIM] = {0};
	cow_dtype_t dt = bd_pick_shape(run, rng, &ndim, sizes);
	size_t es = cow_dtype_size(dt);
	struct bd_mem *m = bd_mem_new(run, st, BD_MEM_BORROWED);
	struct bd_view v;
	struct bd_cell *c;
	struct bd_sto *s;
	cow_tensor_t *t;
	void *p;

	bd_view_dense(&v, ndim, sizes, false);
	snprintf(m->what, sizeof m->what, "borrowed memory");
	m->nbytes = (size_t)bd_numel(&v) * es;
	if (posix_memalign(&p, 64, m->nbytes) != 0)
		abort();
	m->base = p;
	m->expect = bd_alloc(m->nbytes);
	stress_ext_add(m->nbytes);
	c = bd_cell_random(st, dt, bd_numel(&v), m->base, rng);
	memcpy(m->expect, m->base, m->nbytes);
	atomic_store(&m->rec_refs, 1);
	atomic_store(&m->data_refs, 1);
	if (!stress_check(run, cow_tensor_from_external(m->base, dt, ndim,
	    sizes, NULL, 0, NULL, NULL, 0, stress_allocator(), &t) == COW_OK,
	    "cow_tensor_from_external (borrowed): %s", cow_last_error()))
		abort();
	atomic_fetch_add_explicit(&st->n_borrowed, 1, memory_order_relaxed);
	snprintf(c->origin, sizeof c->origin, "a %s tensor over borrowed "
	    "memory", cow_dtype_name(dt));
	/* The cell's data ref is the one the buffer was made with. */
	c->mem = m;
	bd_mem_rec_get(m);
	s = bd_sto_new(st, c, 0);
	s->home = true;
	s->in_mem = true;
	c->home = s;
	return bd_item_new(st, t, s, &v);
}

/* A tensor over a PROT_READ mapping (read-only memory, unmapped by its
 * deleter): a write through any storage must copy, never fault. */
static struct bd_item *
bd_new_mapped(struct stress_run *run, struct bd_state *st,
    struct stress_rng *rng)
{
	int ndim;
	int64_t sizes[BD_MAX_NDIM] = {0};
	cow_dtype_t dt = bd_pick_shape(run, rng, &ndim, sizes);
	size_t es = cow_dtype_size(dt);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct bd_mem *m = bd_mem_new(run, st, BD_MEM_MAPPED);
	struct bd_view v;
	struct bd_cell *c;
	struct bd_sto *s;
	cow_tensor_t *t;
	void *p;

	bd_view_dense(&v, ndim, sizes, false);
	snprintf(m->what, sizeof m->what, "a read-only mapping");
	m->nbytes = ((size_t)bd_numel(&v) * es + page - 1) / page * page;
	m->read_only = true;
	p = mmap(NULL, m->nbytes, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	m->base = p;
	stress_ext_add(m->nbytes);
	c = bd_cell_random(st, dt, bd_numel(&v), m->base, rng);
	if (mprotect(m->base, m->nbytes, PROT_READ) != 0)
		abort();
	m->sum = stress_checksum(m->base, m->nbytes);
	atomic_store(&m->rec_refs, 1);
	atomic_store(&m->data_refs, 1);
	if (!stress_check(run, cow_tensor_from_external(m->base, dt, ndim,
	    sizes, NULL, 0, bd_mapped_deleter, m, COW_STORAGE_READ_ONLY,
	    stress_allocator(), &t) == COW_OK,
	    "cow_tensor_from_external (mapping): %s", cow_last_error()))
		abort();
	atomic_fetch_add_explicit(&st->n_mapped, 1, memory_order_relaxed);
	snprintf(c->origin, sizeof c->origin, "a %s tensor over a read-only "
	    "mapping", cow_dtype_name(dt));
	c->mem = m;
	bd_mem_rec_get(m);
	s = bd_sto_new(st, c, 0);
	s->foreign = true;
	s->in_mem = true;
	return bd_item_new(st, t, s, &v);
}

static struct bd_item *
bd_new(struct stress_run *run, struct bd_state *st, struct stress_rng *rng)
{
	unsigned k = (unsigned)stress_rng_below(rng, 100);

	if (k < 30)
		return bd_new_fresh(run, st, rng);
	if (k < 70)
		return bd_new_producer(run, st, rng);
	if (k < 85)
		return bd_new_borrowed(run, st, rng);
	return bd_new_mapped(run, st, rng);
}

/* ---- item actions ------------------------------------------------------------ */

static void
bd_item_release(struct stress_run *run, struct bd_state *st,
    struct bd_item *it, struct stress_rng *rng)
{
	struct bd_drop d = {BD_OP_RELEASE, it->t, NULL, NULL};

	bd_handle_drop(run, st, it->s, 0, &d, stress_rng_below(rng, 2) == 0,
	    rng);
	free(it);
	atomic_fetch_sub(&st->objs, 1);
}

/* Count a lazy clone (also the snapshot of a read-only export) of a
 * storage in pin state @ps: one that must copy, or may. */
static void
bd_count_clone(struct bd_state *st, enum bd_pinned ps)
{
	if (ps == BD_PINNED)
		atomic_fetch_add_explicit(&st->pin_sure, 1,
		    memory_order_relaxed);
	else if (ps == BD_MAYBE)
		atomic_fetch_add_explicit(&st->pin_maybe, 1,
		    memory_order_relaxed);
}

/* A lazy clone: a snapshot (frozen: never written) or a writable copy. */
static void
bd_lazy_clone(struct stress_run *run, struct bd_state *st,
    struct bd_item *it, struct stress_rng *rng)
{
	struct bd_sto *s = it->s, *ns;
	struct bd_cell *c = s->cell, *nc;
	bool frozen = stress_rng_below(rng, 2) == 0, shares;
	enum bd_pinned ps;
	struct bd_item *n;
	cow_tensor_t *t;
	char pins[64];

	pthread_mutex_lock(&c->lock);
	ps = bd_pin_state(s);
	bd_pin_desc(s, pins, sizeof pins);
	if (!stress_check(run, cow_tensor_lazy_clone(it->t, &t) == COW_OK,
	    "cow_tensor_lazy_clone: %s", cow_last_error())) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	shares = cow_storage_shares_data(cow_tensor_storage(t),
	    cow_tensor_storage(it->t));
	if (ps == BD_UNPINNED)
		stress_check(run, shares && cow_tensor_const_data(t) ==
		    cow_tensor_const_data(it->t), "a lazy clone of a storage "
		    "nobody pins copied (%s)", c->origin);
	bd_count_clone(st, ps);
	if (ps == BD_PINNED)
		atomic_fetch_add_explicit(&st->n_snap_pinned, 1,
		    memory_order_relaxed);
	nc = bd_cell_new(st, c->dtype, c->n);
	memcpy(nc->flat, c->flat, (size_t)c->n * sizeof *c->flat);
	nc->snapshot = true;
	nc->frozen = frozen;
	snprintf(nc->origin, sizeof nc->origin, "%s lazy clone taken in "
	    "round %" PRIu64 " of a storage %.64s", frozen ? "a frozen" : "a",
	    stress_round(run), pins);
	if (shares && s->in_mem) {
		nc->mem = c->mem;
		bd_mem_hold(nc->mem);
	}
	ns = bd_sto_new(st, nc, s->sbase);
	ns->in_mem = shares && s->in_mem;
	ns->foreign = shares && (s->foreign || (s->in_mem &&
	    c->mem->kind == BD_MEM_BORROWED));
	pthread_mutex_unlock(&c->lock);
	n = bd_item_new(st, t, ns, &it->v);
	n->o.hops = it->o.hops;
	pthread_mutex_lock(&nc->lock);
	bd_verify(run, n, "new lazy clone");
	pthread_mutex_unlock(&nc->lock);
	bd_hand_off(run, st, &n->o, rng);
}

/* A new view: a new item on the same storage. */
static void
bd_view(struct stress_run *run, struct bd_state *st, struct bd_item *it,
    struct stress_rng *rng)
{
	struct bd_cell *c = it->s->cell;
	struct bd_vspec sp;
	struct bd_view v = it->v;
	struct bd_item *n;
	cow_tensor_t *t;

	bd_pick_view(rng, &it->v, false, &sp);
	bd_view_apply(&v, &sp);
	pthread_mutex_lock(&c->lock);
	if (!stress_check(run, bd_view_tensor(it->t, &sp, &t) == COW_OK,
	    "%s view: %s", bd_vop_name(sp.op), cow_last_error())) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	it->s->handles++;
	n = bd_item_new(st, t, it->s, &v);
	n->o.hops = it->o.hops;
	bd_verify(run, n, bd_vop_name(sp.op));
	pthread_mutex_unlock(&c->lock);
	bd_hand_off(run, st, &n->o, rng);
}

/* An eager clone: a contiguous copy in a new cell. */
static void
bd_eager_clone(struct stress_run *run, struct bd_state *st,
    struct bd_item *it, struct stress_rng *rng)
{
	struct bd_cell *c = it->s->cell, *nc;
	struct bd_view v;
	struct bd_item *n;
	int64_t *vals;
	cow_tensor_t *t;

	pthread_mutex_lock(&c->lock);
	if (!stress_check(run, cow_tensor_clone(it->t, &t) == COW_OK,
	    "cow_tensor_clone: %s", cow_last_error())) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	stress_check(run, !cow_storage_shares_data(cow_tensor_storage(t),
	    cow_tensor_storage(it->t)), "an eager clone shares data");
	vals = bd_gather(&it->v, c->flat);
	pthread_mutex_unlock(&c->lock);
	bd_view_dense(&v, it->v.ndim, it->v.sizes, false);
	nc = bd_cell_new(st, c->dtype, bd_numel(&v));
	memcpy(nc->flat, vals, (size_t)nc->n * sizeof *vals);
	free(vals);
	snprintf(nc->origin, sizeof nc->origin, "an eager clone");
	n = bd_item_new(st, t, bd_sto_new(st, nc, 0), &v);
	n->o.hops = it->o.hops;
	pthread_mutex_lock(&nc->lock);
	bd_verify(run, n, "eager clone");
	pthread_mutex_unlock(&nc->lock);
	bd_hand_off(run, st, &n->o, rng);
}

/* An in-place write (fill_, add_scalar_ or one element) on the whole
 * tensor or a narrowed region. */
static void
bd_write(struct stress_run *run, struct bd_state *st, struct bd_item *it,
    struct stress_rng *rng)
{
	struct bd_sto *s = it->s;
	struct bd_cell *c = s->cell;
	struct bd_view v = it->v;
	struct bd_vspec sp;
	cow_tensor_t *region = it->t;
	unsigned kind = (unsigned)stress_rng_below(rng, 3);
	int64_t k = 1 + (int64_t)stress_rng_below(rng, 3000);
	bool foreign;
	cow_status_t rc;

	pthread_mutex_lock(&c->lock);
	foreign = s->foreign;
	if (stress_rng_below(rng, 2) == 0) {
		bd_pick_view(rng, &it->v, true, &sp);
		if (!stress_check(run, bd_view_tensor(it->t, &sp, &region) ==
		    COW_OK, "narrow for a write: %s", cow_last_error())) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
		bd_view_apply(&v, &sp);
	}
	if (kind == 0) {
		rc = cow_tensor_fill_(region, (double)k);
		if (rc == COW_OK)
			BD_FOREACH(&v, i, pos, c->flat[pos] = k);
	} else if (kind == 1) {
		k = k % 10;
		rc = cow_tensor_add_scalar_(region, (double)k);
		if (rc == COW_OK)
			BD_FOREACH(&v, i, pos, c->flat[pos] += k);
	} else {
		int64_t idx[BD_MAX_NDIM], pos = v.offset;

		for (int d = 0; d < v.ndim; d++) {
			idx[d] = v.sizes[d] - 1;
			pos += idx[d] * v.strides[d];
		}
		rc = cow_tensor_set_i64(region, idx, k);
		if (rc == COW_OK)
			c->flat[pos] = k;
	}
	if (stress_check(run, rc == COW_OK, "in-place write: %s",
	    cow_last_error())) {
		bd_write_done(run, st, it->t, s, foreign);
		bd_cell_written(c);
	}
	if (region != it->t)
		cow_tensor_release(region);
	bd_verify(run, it, "after a write");
	pthread_mutex_unlock(&c->lock);
}

/* A pin or writable export of the storage made over borrowed memory is
 * refused while lazy clones share that memory (cell lock held). */
static void
bd_check_busy(struct stress_run *run, struct bd_state *st,
    const struct bd_item *it, const char *what)
{
	const struct bd_sto *s = it->s;

	stress_check(run, s->home && s->in_mem &&
	    cow_storage_is_cow(cow_tensor_storage(it->t)), "%s refused "
	    "with COW_EBUSY, but the storage is not the one made over "
	    "borrowed memory that lazy clones still share (%s)", what,
	    cow_last_error());
	atomic_fetch_add_explicit(&st->n_ebusy, 1, memory_order_relaxed);
}

/* Does @dl describe @v's elements (layout, dtype, device)? */
static bool
bd_dl_matches(const struct cow__dl_tensor *dl, const struct bd_view *v,
    cow_dtype_t dt, bool contiguous)
{
	struct bd_view dense;
	bool ok = dl->ndim == v->ndim && dl->byte_offset == 0 &&
	    dl->device.device_type == COW__DL_CPU && dl->dtype.lanes == 1 &&
	    (size_t)dl->dtype.bits == 8 * cow_dtype_size(dt) &&
	    dl->dtype.code == (dt == COW_DTYPE_INT32 ? COW__DL_INT :
	    COW__DL_FLOAT) && dl->strides != NULL;

	bd_view_dense(&dense, v->ndim, v->sizes, false);
	for (int d = 0; ok && d < v->ndim; d++)
		ok = dl->shape[d] == v->sizes[d] && dl->strides[d] ==
		    (contiguous ? dense.strides[d] : v->strides[d]);
	return ok;
}

static const struct cow__dl_tensor *
bd_dl(const struct bd_ticket *tk)
{
	return tk->mv != NULL ? &tk->mv->dl_tensor : &tk->ml->dl_tensor;
}

/* A writable export: the storage is materialised and pinned until the
 * deleter; the ticket's consumer writes through dl_tensor.data. */
static void
bd_export_writable(struct stress_run *run, struct bd_state *st,
    struct bd_item *it, struct stress_rng *rng)
{
	struct bd_sto *s = it->s;
	struct bd_cell *c = s->cell;
	bool versioned = stress_rng_below(rng, 2) == 0, foreign;
	struct DLManagedTensorVersioned *mv = NULL;
	struct DLManagedTensor *ml = NULL;
	const struct cow__dl_tensor *dl;
	struct bd_ticket *tk;
	cow_status_t rc;

	pthread_mutex_lock(&c->lock);
	foreign = s->foreign;
	rc = versioned ? cow_tensor_to_dlpack_versioned(it->t, 0, &mv) :
	    cow_tensor_to_dlpack(it->t, 0, &ml);
	if (rc == COW_EBUSY) {
		bd_check_busy(run, st, it, "a writable export");
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!stress_check(run, rc == COW_OK, "writable export: %s",
	    cow_last_error())) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	dl = mv != NULL ? &mv->dl_tensor : &ml->dl_tensor;
	stress_check(run, dl->data == cow_tensor_const_data(it->t) &&
	    bd_dl_matches(dl, &it->v, c->dtype, false) &&
	    (mv == NULL || mv->flags == 0), "a writable export does not "
	    "describe the tensor's own memory and layout (%s)", c->origin);
	bd_write_done(run, st, it->t, s, foreign);
	s->handles++;
	s->def_exp++;
	tk = bd_ticket_new(st, BD_WEXPORT, c->dtype, &it->v);
	tk->s = s;
	tk->sto = cow_tensor_storage(it->t);
	tk->versioned = versioned;
	tk->mv = mv;
	tk->ml = ml;
	tk->ptr = dl->data;
	tk->ptr_pos = it->v.offset;
	snprintf(tk->origin, sizeof tk->origin, "a writable %s export of %.120s",
	    versioned ? "versioned" : "legacy", c->origin);
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add_explicit(&st->n_wexport, 1, memory_order_relaxed);
	bd_hand_off(run, st, &tk->o, rng);
}

/* A read-only export (an O(1) snapshot) or a copy export: the ticket
 * carries the values at export time. */
static void
bd_export_values(struct stress_run *run, struct bd_state *st,
    struct bd_item *it, bool copy, struct stress_rng *rng)
{
	struct bd_sto *s = it->s;
	struct bd_cell *c = s->cell;
	bool versioned = stress_rng_below(rng, 2) == 0;
	unsigned flags = copy ? COW_DLPACK_COPY |
	    (stress_rng_below(rng, 2) ? COW_DLPACK_READ_ONLY : 0) :
	    COW_DLPACK_READ_ONLY;
	uint64_t want = ((flags & COW_DLPACK_READ_ONLY) ?
	    COW__DL_FLAG_READ_ONLY : 0) | (copy ? COW__DL_FLAG_IS_COPIED : 0);
	struct DLManagedTensorVersioned *mv = NULL;
	struct DLManagedTensor *ml = NULL;
	const struct cow__dl_tensor *dl;
	struct bd_ticket *tk;
	enum bd_pinned ps;
	char pins[64];
	cow_status_t rc;
	bool shares = false;

	pthread_mutex_lock(&c->lock);
	ps = bd_pin_state(s);
	bd_pin_desc(s, pins, sizeof pins);
	rc = versioned ? cow_tensor_to_dlpack_versioned(it->t, flags, &mv) :
	    cow_tensor_to_dlpack(it->t, flags, &ml);
	if (!stress_check(run, rc == COW_OK, "%s export: %s", copy ? "copy" :
	    "read-only", cow_last_error())) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	dl = mv != NULL ? &mv->dl_tensor : &ml->dl_tensor;
	stress_check(run, bd_dl_matches(dl, &it->v, c->dtype, copy) &&
	    (mv == NULL || mv->flags == want), "a %s export does not "
	    "describe the tensor's layout and flags (%s)", copy ? "copy" :
	    "read-only", c->origin);
	if (copy) {
		stress_check(run, dl->data != cow_tensor_const_data(it->t),
		    "a copy export shares the tensor's memory");
	} else {
		bd_count_clone(st, ps);
		shares = dl->data == cow_tensor_const_data(it->t);
		if (ps == BD_UNPINNED)
			stress_check(run, shares, "a read-only export of a "
			    "storage nobody pins copied (it must be an O(1) "
			    "snapshot; %s)", c->origin);
	}
	tk = bd_ticket_new(st, copy ? BD_CEXPORT : BD_REXPORT, c->dtype,
	    &it->v);
	tk->v.offset = 0;
	tk->versioned = versioned;
	tk->flags = flags;
	tk->mv = mv;
	tk->ml = ml;
	tk->vals = bd_gather(&it->v, c->flat);
	if (!copy && s->in_mem) {
		tk->mem = c->mem;
		bd_mem_hold(tk->mem);
	}
	/* As a lazy clone's (bd_lazy_clone): the snapshot's first write
	 * must copy when it shares memory it may not write. */
	tk->foreign = shares && (s->foreign || (s->in_mem &&
	    c->mem->kind == BD_MEM_BORROWED));
	tk->held_offset = copy ? 0 : it->v.offset - s->sbase;
	snprintf(tk->origin, sizeof tk->origin, "%s %s export taken in round "
	    "%" PRIu64 " of a storage %.64s", copy ? "a copy" : "a read-only",
	    versioned ? "versioned" : "legacy", stress_round(run), pins);
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add_explicit(copy ? &st->n_cexport : &st->n_rexport, 1,
	    memory_order_relaxed);
	bd_hand_off(run, st, &tk->o, rng);
}

/* A pin: cow_tensor_pin or cow_storage_pin; the ticket writes through
 * the pointer until it unpins. */
static void
bd_pin(struct stress_run *run, struct bd_state *st, struct bd_item *it,
    struct stress_rng *rng)
{
	struct bd_sto *s = it->s;
	struct bd_cell *c = s->cell;
	bool storage_pin = stress_rng_below(rng, 5) < 2, foreign, was_in;
	cow_storage_t *sto = cow_tensor_storage(it->t);
	struct bd_ticket *tk;
	cow_status_t rc;
	void *p = NULL;

	pthread_mutex_lock(&c->lock);
	foreign = s->foreign;
	was_in = s->in_mem;
	rc = storage_pin ? cow_storage_pin(sto, &p) :
	    cow_tensor_pin(it->t, &p);
	if (rc == COW_EBUSY) {
		bd_check_busy(run, st, it, storage_pin ? "cow_storage_pin" :
		    "cow_tensor_pin");
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (!stress_check(run, rc == COW_OK, "%s: %s", storage_pin ?
	    "cow_storage_pin" : "cow_tensor_pin", cow_last_error())) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	stress_check(run, p == (storage_pin ? cow_storage_const_data(sto) :
	    cow_tensor_const_data(it->t)), "a pin returned %p, not the "
	    "%s's data", p, storage_pin ? "storage" : "tensor");
	bd_write_done(run, st, it->t, s, foreign);
	if (s->home && was_in)
		stress_check(run, s->in_mem, "a pin of the storage made over "
		    "borrowed memory did not pin that memory in place");
	s->handles++;
	s->def_pin++;
	cow_tensor_retain(it->t);
	tk = bd_ticket_new(st, BD_PIN, c->dtype, &it->v);
	tk->s = s;
	tk->t = it->t;
	tk->storage_pin = storage_pin;
	tk->ptr = p;
	tk->ptr_pos = storage_pin ? s->sbase : it->v.offset;
	snprintf(tk->origin, sizeof tk->origin, "a pointer pinned with %s",
	    storage_pin ? "cow_storage_pin" : "cow_tensor_pin");
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add_explicit(&st->n_pin, 1, memory_order_relaxed);
	bd_hand_off(run, st, &tk->o, rng);
}

/* One hop of an item. */
static void
bd_item_step(struct stress_run *run, struct bd_state *st,
    struct bd_item *it, struct stress_rng *rng, unsigned tid)
{
	struct bd_cell *c = it->s->cell;
	unsigned act;

	pthread_mutex_lock(&c->lock);
	bd_verify(run, it, "received");
	pthread_mutex_unlock(&c->lock);
	stress_perturb(rng);
	act = (unsigned)stress_rng_below(rng, 100);
	/* A frozen snapshot is only read, cloned, viewed and exported. */
	if (c->frozen && act >= 34 && act < 78)
		act = 99;
	if (act < 14)
		bd_lazy_clone(run, st, it, rng);
	else if (act < 20)
		bd_view(run, st, it, rng);
	else if (act < 26)
		bd_export_values(run, st, it, false, rng);
	else if (act < 30)
		bd_export_values(run, st, it, true, rng);
	else if (act < 34)
		bd_eager_clone(run, st, it, rng);
	else if (act < 54)
		bd_write(run, st, it, rng);
	else if (act < 68)
		bd_export_writable(run, st, it, rng);
	else if (act < 78)
		bd_pin(run, st, it, rng);
	else if (act < 86) {
		stress_ops(run, tid, 2);
		bd_item_release(run, st, it, rng);
		return;
	}
	stress_ops(run, tid, 2);
	bd_hand_off(run, st, &it->o, rng);
}

/* ---- ticket actions ------------------------------------------------------------ */

static struct bd_cell *
bd_ticket_cell(const struct bd_ticket *tk)
{
	return tk->s != NULL ? tk->s->cell : tk->cell;
}

/* A write through a pointer into a cell's memory (a consumer, a pin, a
 * producer), serialised with the storage's other uses by the cell lock,
 * as the contract asks of the user. @all: every element (the last write
 * before letting go). */
static void
bd_raw_write(struct bd_ticket *tk, struct stress_rng *rng, bool all)
{
	struct bd_cell *c = bd_ticket_cell(tk);
	size_t es = cow_dtype_size(tk->dtype);
	unsigned mode = all ? 0 : (unsigned)stress_rng_below(rng, 3);
	int64_t k = 1 + (int64_t)stress_rng_below(rng, 3000);
	int64_t every = 2 + (int64_t)stress_rng_below(rng, 3);
	int64_t one = (int64_t)stress_rng_below(rng,
	    (uint64_t)bd_numel(&tk->v));

	pthread_mutex_lock(&c->lock);
	BD_FOREACH(&tk->v, i, pos, {
		unsigned char *a = tk->ptr + (pos - tk->ptr_pos) * (int64_t)es;

		if (mode == 0 || (mode == 1 && i % every == 0) ||
		    (mode == 2 && i == one)) {
			int64_t x = mode == 1 ? c->flat[pos] + k % 10 : k;

			bd_put(a, tk->dtype, x);
			c->flat[pos] = x;
		}
	});
	bd_cell_written(c);
	pthread_mutex_unlock(&c->lock);
}

/* A read-only or copy export's values, read through its DLTensor. */
static void
bd_check_values(struct stress_run *run, const struct bd_ticket *tk,
    const char *when)
{
	const struct cow__dl_tensor *dl = bd_dl(tk);
	const unsigned char *base = (const unsigned char *)dl->data +
	    dl->byte_offset;
	size_t es = cow_dtype_size(tk->dtype);
	struct bd_view v;
	int64_t bad = -1, got = 0;

	v.ndim = dl->ndim;
	v.offset = 0;
	for (int d = 0; d < v.ndim; d++) {
		v.sizes[d] = dl->shape[d];
		v.strides[d] = dl->strides[d];
	}
	BD_FOREACH(&v, k, pos, {
		int64_t x = bd_get(base + (size_t)pos * es, tk->dtype);

		if (bad < 0 && x != tk->vals[k]) {
			bad = k;
			got = x;
		}
	});
	if (tk->o.kind == BD_REXPORT)
		stress_check(run, bad < 0, "%s: a snapshot (%s) changed: "
		    "element %" PRId64 " is %" PRId64 ", expected %" PRId64
		    " (its value when it was taken)", when, tk->origin, bad,
		    got, bad >= 0 ? tk->vals[bad] : 0);
	else
		stress_check(run, bad < 0, "%s: %s differs from the values "
		    "exported: element %" PRId64 " is %" PRId64 ", expected %"
		    PRId64, when, tk->origin, bad, got,
		    bad >= 0 ? tk->vals[bad] : 0);
}

/* The consumer of a copy export writes its own copy. */
static void
bd_copy_write(struct bd_ticket *tk, struct stress_rng *rng)
{
	const struct cow__dl_tensor *dl = bd_dl(tk);
	size_t es = cow_dtype_size(tk->dtype);
	int64_t k = 1 + (int64_t)stress_rng_below(rng, 3000);
	int64_t n = bd_numel(&tk->v);

	/* Contiguous (checked at export): element i at data + i. */
	for (int64_t i = (int64_t)stress_rng_below(rng, 2); i < n; i += 2) {
		bd_put((unsigned char *)dl->data + (size_t)i * es, tk->dtype,
		    k);
		tk->vals[i] = k;
	}
}

static void
bd_deleter(const struct bd_ticket *tk)
{
	if (tk->mv != NULL)
		tk->mv->deleter(tk->mv);
	else
		tk->ml->deleter(tk->ml);
}

/* Let go of a ticket. */
static void
bd_ticket_finish(struct stress_run *run, struct bd_state *st,
    struct bd_ticket *tk, struct stress_rng *rng)
{
	struct bd_drop d = {BD_OP_DELETER, NULL, tk->ml, tk->mv};
	bool ordered = stress_rng_below(rng, 2) == 0;

	switch (tk->o.kind) {
	case BD_WEXPORT:
		bd_handle_drop(run, st, tk->s, 1, &d, ordered, rng);
		break;
	case BD_PIN:
		d.op = tk->storage_pin ? BD_OP_UNPIN_STORAGE :
		    BD_OP_UNPIN_TENSOR;
		d.t = tk->t;
		bd_handle_drop(run, st, tk->s, 2, &d, ordered, rng);
		break;
	case BD_REXPORT:
	case BD_CEXPORT:
		stress_perturb(rng);
		bd_deleter(tk);
		bd_mem_unhold(tk->mem);
		break;
	case BD_PRODUCER:
		bd_mem_data_put(tk->mem);
		bd_cell_put(st, tk->cell);
		break;
	default:
		abort();
	}
	bd_ticket_free(st, tk);
}

/* Import a writable export of ours: a view of the exported storage (the
 * same sto: tensors alias exactly when they share a storage), which takes
 * over the export's handle; the import releases the export, and with it
 * the export's pin. */
static void
bd_import_writable(struct stress_run *run, struct bd_state *st,
    struct bd_ticket *tk, struct stress_rng *rng)
{
	struct bd_sto *s = tk->s;
	struct bd_cell *c = s->cell;
	struct bd_item *n;
	cow_tensor_t *t;
	cow_status_t rc;

	pthread_mutex_lock(&c->lock);
	rc = tk->mv != NULL ? cow_tensor_from_dlpack_versioned(tk->mv, 0, &t) :
	    cow_tensor_from_dlpack(tk->ml, 0, &t);
	if (!stress_check(run, rc == COW_OK, "import of our writable export: "
	    "%s", cow_last_error())) {
		/* The deleter ran; the state is not worth keeping. */
		atomic_store(&run->abandon, true);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	s->def_exp--;
	stress_check(run, cow_tensor_storage(t) == tk->sto &&
	    cow_tensor_const_data(t) == (const void *)tk->ptr,
	    "an import of %s is not a view of the exported storage", tk->origin);
	n = bd_item_new(st, t, s, &tk->v);
	/* Checks the layout, the values, and that the pin went (unless
	 * someone else pins the storage). */
	bd_verify(run, n, "import of a writable export");
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add_explicit(&st->n_reimport, 1, memory_order_relaxed);
	bd_ticket_free(st, tk);
	bd_hand_off(run, st, &n->o, rng);
}

/* Import a read-only or copy export of ours: a tensor on the snapshot or
 * copy the export holds (a new cell with the values exported), which the
 * import takes over, as from a lazy clone or an eager one; never pinned,
 * whatever the flags and ABI. */
static void
bd_import_values(struct stress_run *run, struct bd_state *st,
    struct bd_ticket *tk, struct stress_rng *rng)
{
	const struct cow__dl_tensor *dl = bd_dl(tk);
	bool ro = (tk->flags & COW_DLPACK_READ_ONLY) != 0;
	bool copy = (tk->flags & COW_DLPACK_COPY) != 0;
	struct bd_view v;
	struct bd_cell *c;
	struct bd_sto *s;
	struct bd_item *n;
	cow_tensor_t *t;
	cow_status_t rc;
	const void *data = (const unsigned char *)dl->data + dl->byte_offset;

	v.ndim = dl->ndim;
	v.offset = 0;
	for (int d = 0; d < v.ndim; d++) {
		v.sizes[d] = dl->shape[d];
		v.strides[d] = dl->strides[d];
	}
	c = bd_cell_new(st, tk->dtype, bd_extent(&v));
	BD_FOREACH(&v, k, pos, c->flat[pos] = tk->vals[k]);
	c->mem = tk->mem; /* the ticket's hold, or NULL */
	tk->mem = NULL;
	if (tk->mv != NULL)
		rc = cow_tensor_from_dlpack_versioned(tk->mv, 0, &t);
	else
		rc = cow_tensor_from_dlpack(tk->ml, ro ? COW_DLPACK_READ_ONLY :
		    0, &t);
	snprintf(c->origin, sizeof c->origin, "an import of %.140s",
	    tk->origin);
	c->snapshot = !copy;
	if (!stress_check(run, rc == COW_OK, "import of our %s export: %s",
	    copy ? "copy" : "read-only", cow_last_error())) {
		atomic_store(&run->abandon, true);
		return;
	}
	/* Flat position 0 is the export's element 0. */
	s = bd_sto_new(st, c, -tk->held_offset);
	s->in_mem = c->mem != NULL && bd_in(c->mem, data);
	s->foreign = tk->foreign && s->in_mem;
	stress_check(run, cow_tensor_const_data(t) == data &&
	    !cow_storage_is_pinned(cow_tensor_storage(t)),
	    "an import of %s: data %s, pinned %d", tk->origin,
	    cow_tensor_const_data(t) == data ? "the export's" : "elsewhere",
	    cow_storage_is_pinned(cow_tensor_storage(t)));
	n = bd_item_new(st, t, s, &v);
	pthread_mutex_lock(&c->lock);
	bd_verify(run, n, "import of an export");
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add_explicit(&st->n_reimport, 1, memory_order_relaxed);
	bd_ticket_free(st, tk);
	bd_hand_off(run, st, &n->o, rng);
}

/* One hop of a ticket. */
static void
bd_ticket_step(struct stress_run *run, struct bd_state *st,
    struct bd_ticket *tk, struct stress_rng *rng, unsigned tid)
{
	unsigned act = (unsigned)stress_rng_below(rng, 100);

	stress_perturb(rng);
	stress_ops(run, tid, 1);
	switch (tk->o.kind) {
	case BD_WEXPORT:
		if (act < 55) {
			bd_raw_write(tk, rng, false);
		} else if (act < 70) {
			bd_import_writable(run, st, tk, rng);
			return;
		} else {
			bd_ticket_finish(run, st, tk, rng);
			return;
		}
		break;
	case BD_REXPORT:
	case BD_CEXPORT:
		bd_check_values(run, tk, "received");
		if (tk->o.kind == BD_CEXPORT && act < 30 &&
		    !(tk->flags & COW_DLPACK_READ_ONLY)) {
			bd_copy_write(tk, rng);
		} else if (act < 45) {
			bd_import_values(run, st, tk, rng);
			return;
		} else if (act < 75) {
			bd_ticket_finish(run, st, tk, rng);
			return;
		}
		break;
	case BD_PIN:
	case BD_PRODUCER:
		if (act < 60) {
			bd_raw_write(tk, rng, false);
		} else {
			bd_ticket_finish(run, st, tk, rng);
			return;
		}
		break;
	default:
		abort();
	}
	bd_hand_off(run, st, &tk->o, rng);
}

/* ---- the ring ------------------------------------------------------------------ */

/* Queue @o for another thread, or retire it. */
static void
bd_hand_off(struct stress_run *run, struct bd_state *st, struct bd_obj *o,
    struct stress_rng *rng)
{
	unsigned limit = o->kind == BD_ITEM ? BD_HOPS : BD_TICKET_HOPS;

	if (o->hops++ < limit &&
	    stress_ring_count(st->h.ring) < st->h.population &&
	    stress_ring_put(st->h.ring, o)) {
		atomic_fetch_add_explicit(&st->n_handoff, 1,
		    memory_order_relaxed);
		return;
	}
	if (o->kind == BD_ITEM)
		bd_item_release(run, st, (struct bd_item *)o, rng);
	else
		bd_ticket_finish(run, st, (struct bd_ticket *)o, rng);
}

/* ---- the scenario ----------------------------------------------------------------- */

static bool
bd_setup(struct stress_run *run)
{
	struct bd_state *st = stress_handoff_state_new(sizeof *st,
	    run->threads);

	if (st == NULL)
		return false;
	cow_stats_get(&st->before);
	run->state = st;
	return true;
}

static void
bd_teardown(struct stress_run *run)
{
	struct bd_state *st = run->state;
	uint64_t h = atomic_load(&st->n_handoff);
	uint64_t w = atomic_load(&st->n_wexport);
	uint64_t r = atomic_load(&st->n_rexport);
	uint64_t c = atomic_load(&st->n_cexport);
	uint64_t i = atomic_load(&st->n_reimport);
	uint64_t p = atomic_load(&st->n_producer);
	uint64_t b = atomic_load(&st->n_borrowed);
	uint64_t m = atomic_load(&st->n_mapped);
	uint64_t n = atomic_load(&st->n_pin);
	uint64_t s = atomic_load(&st->n_snap_pinned);
	uint64_t e = atomic_load(&st->n_ebusy);

	uint64_t ex = w + r + c;

	/* One line like the others: the details are in the counters. */
	snprintf(run->note, sizeof run->note,
	    "%" PRIu64 " %s; %" PRIu64 " %s (%" PRIu64 " imported back), %"
	    PRIu64 " producer %s, %" PRIu64 " borrowed or mapped; %" PRIu64
	    " %s (%" PRIu64 " busy); %" PRIu64 " pinned %s",
	    h, stress_plural(h, "hand-off", "hand-offs"), ex,
	    stress_plural(ex, "export", "exports"), i, p,
	    stress_plural(p, "import", "imports"), b + m, n,
	    stress_plural(n, "pin", "pins"), e, s,
	    stress_plural(s, "snapshot", "snapshots"));
	stress_ring_free(st->h.ring);
	free(st);
	run->state = NULL;
}

/* tid 0, after the drain: everything is back, and the library's counters
 * moved as the harness predicts. */
static void
bd_final_checks(struct stress_run *run, struct bd_state *st)
{
	cow_stats_t now;
	uint64_t ext, pinned, sure, maybe;

	stress_check(run, atomic_load(&st->objs) == 0 &&
	    atomic_load(&st->stos) == 0 && atomic_load(&st->cells) == 0,
	    "after the drain: %" PRId64 " objects, %" PRId64 " storages, %"
	    PRId64 " cells left", atomic_load(&st->objs),
	    atomic_load(&st->stos), atomic_load(&st->cells));
	stress_check(run, atomic_load(&st->mems) == 0, "after the drain: %"
	    PRId64 " harness buffers not given back (a deleter that never "
	    "ran, or borrowed memory still referenced)",
	    atomic_load(&st->mems));
	stress_check(run, stress_default_live_allocs() == st->h.base_allocs,
	    "live allocations after every tensor was released: %" PRIu64
	    " (expected %" PRIu64 ")", stress_default_live_allocs(),
	    st->h.base_allocs);
	cow_stats_get(&now);
	ext = now.external_copies - st->before.external_copies;
	pinned = now.pinned_clones - st->before.pinned_clones;
	sure = atomic_load(&st->pin_sure);
	maybe = atomic_load(&st->pin_maybe);
	stress_check(run, ext == atomic_load(&st->exp_external),
	    "external_copies moved by %" PRIu64 ", expected %" PRIu64
	    " (writes through storages that may not write their memory)",
	    ext, atomic_load(&st->exp_external));
	stress_check(run, pinned >= sure && pinned <= sure + maybe,
	    "pinned_clones moved by %" PRIu64 ", expected %" PRIu64
	    " (clones of pinned storages) to %" PRIu64 " (and of storages "
	    "being unpinned)", pinned, sure, sure + maybe);
}

static void
bd_worker(struct stress_run *run, unsigned tid)
{
	struct bd_state *st = run->state;
	struct stress_rng rng;
	struct bd_obj *o;
	struct bd_item **mine = NULL;
	size_t nmine = 0, cap = 0;

	stress_rng_init(&rng, run->seed, tid, 7);
	while (stress_next_round(run, tid)) {
		for (unsigned step = 0; step < BD_STEPS; step++) {
			/* New objects join now and then, and whenever the
			 * ring is empty. */
			if (stress_rng_below(&rng, 10) == 0)
				bd_hand_off(run, st, &bd_new(run, st, &rng)->o,
				    &rng);
			o = stress_ring_get(st->h.ring);
			if (o == NULL)
				o = &bd_new(run, st, &rng)->o;
			if (o->kind == BD_ITEM)
				bd_item_step(run, st, (struct bd_item *)o,
				    &rng, tid);
			else
				bd_ticket_step(run, st, (struct bd_ticket *)o,
				    &rng, tid);
		}
	}
	/* Drain. First every ticket lets go, after one last write through
	 * its pointer; then every item is checked and released, so that a
	 * snapshot that shares bytes a pointer wrote is caught. */
	stress_barrier(run);
	while ((o = stress_ring_get(st->h.ring)) != NULL) {
		if (o->kind == BD_ITEM) {
			if (nmine == cap) {
				cap = cap ? 2 * cap : 16;
				mine = realloc(mine, cap * sizeof *mine);
				if (mine == NULL)
					abort();
			}
			mine[nmine++] = (struct bd_item *)o;
			continue;
		}
		if (o->kind == BD_WEXPORT || o->kind == BD_PIN ||
		    o->kind == BD_PRODUCER)
			bd_raw_write((struct bd_ticket *)o, &rng, true);
		else
			bd_check_values(run, (struct bd_ticket *)o, "drained");
		bd_ticket_finish(run, st, (struct bd_ticket *)o, &rng);
	}
	stress_barrier(run);
	for (size_t i = 0; i < nmine; i++) {
		struct bd_cell *c = mine[i]->s->cell;

		pthread_mutex_lock(&c->lock);
		bd_verify(run, mine[i], "drained");
		pthread_mutex_unlock(&c->lock);
		if (!atomic_load(&run->abandon))
			bd_item_release(run, st, mine[i], &rng);
	}
	free(mine);
	stress_barrier(run);
	if (tid == 0 && !atomic_load(&run->abandon))
		bd_final_checks(run, st);
}

const struct stress_scenario stress_scn_boundary = {
	.name = "boundary",
	.summary = "DLPack exports and imports, pins, snapshots and writes "
	    "over external memory, across threads",
	.setup = bd_setup,
	.worker = bd_worker,
	.teardown = bd_teardown,
};
