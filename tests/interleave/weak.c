/*
 * weak.c - the weak-memory mode of the interleaving checker (weak.h).
 *
 * Clocks. Each test thread has a vector clock (its own entry counts its
 * events), a release clock (the clock at its last release fence: what a
 * relaxed store after that fence publishes) and an acquire clock (the
 * messages its relaxed loads read since: what its next acquire fence
 * takes). A store is stamped (thread, own clock entry) and carries a
 * message: the thread's clock for a release store, its release clock
 * otherwise; a read-modify-write adds the message of the store it reads
 * (release sequences). The main thread (set-up, checks, tear-down) runs
 * while no test thread does: its stores happen before everything.
 *
 * Coherence. A location's stores are in modification order (the order the
 * execution made them: a choice of the scheduler like any other). A load
 * by thread t may read the newest store, or an older one that is neither
 * older than the newest store t has already seen there nor older than the
 * newest store that happens before the load. A read-modify-write reads the
 * newest store. A seq_cst fence is acq_rel, and the fences' rule of the
 * single total order S (fence_sc): S is the order of execution. The
 * synchronisation headers (core/atomic.h, refcount.h, rwlock.h) have no
 * seq_cst access.
 *
 * Values. Their atomics run ck's real instructions on real memory, one
 * thread at a time, so memory holds the newest store. A load that the
 * scheduler lets read an older store finds that value poked into memory by
 * its hook; the thread's next hook puts the newest back (no other thread
 * runs in between, and the thread does no other atomic access). A store's
 * value is read from memory at the thread's next hook, unless the thread
 * freed the memory meanwhile (then nobody may read it any more).
 *
 * What a failure says: the violation line (no addresses), and for a data
 * race the stack of the second access above it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>

#include "weak.h"

#define ILV_MAX_LOCATIONS 1024
#define ILV_MAX_REGIONS 512

struct ilv_vc {
	uint32_t c[ILV_MAX_THREADS];
};

struct ilv_store {
	uint64_t value;
	struct ilv_vc msg; /* what an acquire that reads it learns */
	uint32_t seq;      /* position in modification order, from 1 */
	uint32_t stamp;    /* the storer's own clock entry */
	int8_t tid;        /* -1: the main thread */
};

struct ilv_loc {
	const void *addr;
	unsigned size;    /* bytes in memory; 0: the checker holds the value */
	uint32_t nseq;
	int n;            /* stores kept, h[0] the newest */
	struct ilv_store h[ILV_HISTORY_MAX];
	uint32_t seen[ILV_MAX_THREADS]; /* newest seq each thread observed */
	/* The newest seq that a load after the next seq_cst fence must
	 * read at least (fence_sc). */
	uint32_t sc_floor;
	int8_t init_tid;  /* the thread whose plain initialisation made it */
	uint32_t init_stamp;
};

/* A plain access range and who touched it last. */
struct ilv_region {
	uintptr_t lo, hi;
	int8_t wtid;                    /* last writer, -1 none or main */
	uint32_t wstamp;
	uint32_t rstamp[ILV_MAX_THREADS]; /* last read per thread, 0 none */
};

enum ilv_pending { ILV_NONE, ILV_STORE, ILV_RMW };

struct ilv_wthread {
	struct ilv_vc vc, rel, acq;
	/* The access whose store is recorded at the next hook. */
	enum ilv_pending pending;
	struct ilv_loc *ploc;
	uint64_t before;      /* ILV_RMW: the value it read */
	struct ilv_store pstore;
	bool pinit;           /* the store is the location's initialisation */
	struct ilv_loc *poked; /* memory holds a stale value of this one */
	/* Its last load: the location and the seq of the store it read. */
	struct ilv_loc *rloc;
	uint32_t rseq;
};

static struct {
	int nthreads, history;
	struct ilv_wthread t[ILV_MAX_THREADS];
	int nlocs, nregions;
	struct ilv_loc locs[ILV_MAX_LOCATIONS];
	struct ilv_region regions[ILV_MAX_REGIONS];
} W;

void
ilv_weak_reset(int nthreads, int history)
{
	memset(&W, 0, sizeof W);
	W.nthreads = nthreads;
	W.history = history;
}

static void
vc_join(struct ilv_vc *a, const struct ilv_vc *b)
{
	for (int i = 0; i < ILV_MAX_THREADS; i++)
		if (b->c[i] > a->c[i])
			a->c[i] = b->c[i];
}

static uint32_t
tick(int t)
{
	return ++W.t[t].vc.c[t];
}

static bool
mo_acquires(enum cow__mo mo)
{
	return mo == COW__MO_ACQUIRE || mo == COW__MO_ACQ_REL ||
	    mo == COW__MO_SEQ_CST;
}

static bool
mo_releases(enum cow__mo mo)
{
	return mo == COW__MO_RELEASE || mo == COW__MO_ACQ_REL ||
	    mo == COW__MO_SEQ_CST;
}

/* Does the event (@tid, @stamp) happen before thread @t's next event? */
static bool
hb(int tid, uint32_t stamp, int t)
{
	return tid < 0 || tid == t || stamp <= W.t[t].vc.c[tid];
}

static uint64_t
mem_read(const void *addr, unsigned size)
{
	uint64_t v = 0;

	memcpy(&v, addr, size); /* little-endian: the low bytes */
	return v;
}

static bool
mem_alive(const void *addr, unsigned size)
{
	return !__asan_region_is_poisoned((void *)(uintptr_t)addr, size);
}

static struct ilv_loc *
loc_find(const void *addr)
{
	for (int i = 0; i < W.nlocs; i++)
		if (W.locs[i].addr == addr)
			return &W.locs[i];
	return NULL;
}

static struct ilv_loc *
loc_new(const void *addr, unsigned size)
{
	struct ilv_loc *l;

	if (W.nlocs == ILV_MAX_LOCATIONS)
		ilv_fail("weak-memory mode: more than %d atomic locations",
		    ILV_MAX_LOCATIONS);
	l = &W.locs[W.nlocs++];
	memset(l, 0, sizeof *l);
	l->addr = addr;
	l->size = size;
	l->init_tid = -1;
	return l;
}

/* A new newest store; the oldest goes when the history is full. The
 * storer has seen its own store. */
static void
loc_append(struct ilv_loc *l, struct ilv_store s)
{
	int keep = l->n < W.history ? l->n : W.history - 1;

	memmove(&l->h[1], &l->h[0], (size_t)keep * sizeof l->h[0]);
	s.seq = ++l->nseq;
	l->h[0] = s;
	l->n = keep + 1;
	if (s.tid >= 0)
		l->seen[s.tid] = s.seq;
}

/* The location at @addr; a new one starts with what memory (or, for a
 * lock, @value) holds, as the main thread's store. */
static struct ilv_loc *
loc_get(const void *addr, unsigned size, uint64_t value)
{
	struct ilv_loc *l = loc_find(addr);

	if (l == NULL) {
		l = loc_new(addr, size);
		loc_append(l, (struct ilv_store){
		    .value = size > 0 ? mem_read(addr, size) : value,
		    .tid = -1});
	}
	return l;
}

static const char *
op_name(enum cow__sched_op op)
{
	switch (op) {
	case COW__SCHED_REF_INIT: return "refcount init";
	case COW__SCHED_REF_GET: return "refcount get";
	case COW__SCHED_REF_SUB: return "refcount sub";
	case COW__SCHED_REF_LOAD: return "refcount load";
	case COW__SCHED_PIN_LOAD: return "pin count load";
	case COW__SCHED_PTR_LOAD: return "pointer load";
	case COW__SCHED_PTR_STORE: return "pointer store";
	case COW__SCHED_PTR_INSTALL: return "pointer install";
	case COW__SCHED_COUNTER_LOAD: return "counter load";
	case COW__SCHED_COUNTER_STORE: return "counter store";
	case COW__SCHED_COUNTER_RMW: return "counter update";
	case COW__SCHED_EPOCH_LOAD: return "epoch load";
	default: return "lock operation";
	}
}

/* An atomic access races with the plain initialisation of its location
 * unless that happens before it. */
static void
check_init(const struct ilv_loc *l, int t, const char *what)
{
	if (l->init_tid >= 0 && !hb(l->init_tid, l->init_stamp, t))
		ilv_fail("data race: thread %c's %s reads a location that "
		    "thread %c initialised, with no happens-before between "
		    "them (the initialisation was not published)", 'a' + t,
		    what, 'a' + l->init_tid);
}

/* The stores thread @t may read at @l (bit k: h[k]). */
static unsigned
readable(const struct ilv_loc *l, int t)
{
	uint32_t floor = l->seen[t];
	unsigned mask = 0;

	for (int k = 0; k < l->n; k++)
		if (hb(l->h[k].tid, l->h[k].stamp, t)) {
			if (l->h[k].seq > floor)
				floor = l->h[k].seq;
			break;
		}
	for (int k = 0; k < l->n; k++)
		if (l->h[k].seq >= floor)
			mask |= 1u << k;
	return mask;
}

/* Thread @t reads h[@k] of @l with order @mo. */
static void
read_store(int t, struct ilv_loc *l, int k, enum cow__mo mo)
{
	struct ilv_wthread *w = &W.t[t];

	tick(t);
	if (l->h[k].seq > l->seen[t])
		l->seen[t] = l->h[k].seq;
	vc_join(mo_acquires(mo) ? &w->vc : &w->acq, &l->h[k].msg);
}

/* A load by @t among the stores of @mask: the scheduler chooses. */
static int
load(int t, struct ilv_loc *l, unsigned mask, enum cow__mo mo)
{
	int k;

	if ((mask & (mask - 1)) == 0) {
		k = __builtin_ctz(mask);
		ilv_note_read(k, l->n);
	} else {
		k = ilv_choose_read(mask);
	}
	read_store(t, l, k, mo);
	W.t[t].rloc = l;
	W.t[t].rseq = l->h[k].seq;
	return k;
}

/* The record of a store by @t with order @mo (@rmw: of a read-modify-write
 * that read h[0]); loc_append gives it its place. */
static struct ilv_store
make_store(int t, const struct ilv_loc *l, uint64_t value, enum cow__mo mo,
    bool rmw)
{
	struct ilv_wthread *w = &W.t[t];
	struct ilv_store s = {.value = value, .tid = (int8_t)t};

	if (rmw)
		read_store(t, (struct ilv_loc *)(uintptr_t)l, 0, mo);
	s.stamp = tick(t);
	s.msg = mo_releases(mo) ? w->vc : w->rel;
	if (rmw)
		vc_join(&s.msg, &l->h[0].msg);
	return s;
}

/*
 * A seq_cst fence by @t, the next in the single total order S (which is
 * the order of execution). C11 7.17.3 (C++ [atomics.order], fences X and
 * Y: if X happens before A, B happens before Y and A is coherence-ordered
 * before B, then X precedes Y in S): for an earlier seq_cst fence Y, no
 * load after this one may read a store older than one that Y's thread had
 * seen, or that happened before Y. So each fence raises @t's floor at
 * every location to what the earlier fences published (sc_floor), then
 * publishes @t's own: the store-buffering handshake of two threads that
 * each store, fence and load what the other stored (core/fork.h, the
 * snapshot's end of save) then has at least one see the other's store.
 * What the rule bounds is per location and thread, not per event: a
 * thread's seen stores stand for the ones sequenced before the fence.
 */
static void
fence_sc(int t)
{
	for (int i = 0; i < W.nlocs; i++) {
		struct ilv_loc *l = &W.locs[i];
		uint32_t own;

		if (l->sc_floor > l->seen[t])
			l->seen[t] = l->sc_floor;
		own = l->seen[t];
		for (int k = 0; k < l->n; k++)
			if (hb(l->h[k].tid, l->h[k].stamp, t)) {
				if (l->h[k].seq > own)
					own = l->h[k].seq;
				break;
			}
		if (own > l->sc_floor)
			l->sc_floor = own;
	}
}

static void
fence(int t, enum cow__mo mo)
{
	struct ilv_wthread *w = &W.t[t];

	tick(t);
	if (mo_acquires(mo))
		vc_join(&w->vc, &w->acq);
	if (mo_releases(mo))
		w->rel = w->vc;
	if (mo == COW__MO_SEQ_CST)
		fence_sc(t);
}

void
ilv_weak_settle(int t)
{
	struct ilv_wthread *w = &W.t[t];
	struct ilv_loc *l = w->ploc;

	if (w->pending != ILV_NONE && mem_alive(l->addr, l->size)) {
		uint64_t v = mem_read(l->addr, l->size);

		/* A compare-and-swap that failed stored nothing. */
		if (w->pending == ILV_STORE || v != w->before) {
			w->pstore.value = v;
			if (w->pinit) {
				l->n = 0;
				l->init_tid = (int8_t)t;
				l->init_stamp = w->pstore.stamp;
			}
			loc_append(l, w->pstore);
		}
	}
	w->pending = ILV_NONE;
	if (w->poked != NULL) {
		l = w->poked;
		if (mem_alive(l->addr, l->size))
			memcpy((void *)(uintptr_t)l->addr, &l->h[0].value,
			    l->size);
		w->poked = NULL;
	}
}

static unsigned
op_size(enum cow__sched_op op)
{
	switch (op) {
	case COW__SCHED_REF_INIT: case COW__SCHED_REF_GET:
	case COW__SCHED_REF_SUB: case COW__SCHED_REF_LOAD:
	case COW__SCHED_PIN_LOAD:
		return sizeof(unsigned);
	case COW__SCHED_PTR_LOAD: case COW__SCHED_PTR_STORE:
	case COW__SCHED_PTR_INSTALL:
		return sizeof(void *);
	default:
		return sizeof(uint64_t);
	}
}

void
ilv_weak_atomic(int t, enum cow__sched_op op, const void *addr,
    enum cow__mo mo)
{
	struct ilv_wthread *w = &W.t[t];
	unsigned size = op_size(op);
	struct ilv_loc *l;
	int k;

	if (op == COW__SCHED_FENCE) {
		fence(t, mo);
		return;
	}
	if (op == COW__SCHED_WINDOW)
		return;
	if (op == COW__SCHED_REF_INIT) {
		/* A plain initialisation: the location starts over. */
		l = loc_find(addr);
		if (l == NULL)
			l = loc_new(addr, size);
		w->pending = ILV_STORE;
		w->ploc = l;
		w->pinit = true;
		w->pstore = make_store(t, l, 0, mo, false);
		return;
	}
	l = loc_get(addr, size, 0);
	check_init(l, t, op_name(op));
	w->pinit = false;
	switch (op) {
	case COW__SCHED_REF_LOAD: case COW__SCHED_PIN_LOAD:
	case COW__SCHED_PTR_LOAD: case COW__SCHED_EPOCH_LOAD:
	case COW__SCHED_COUNTER_LOAD:
		k = load(t, l, readable(l, t), mo);
		if (k != 0) {
			memcpy((void *)(uintptr_t)addr, &l->h[k].value, size);
			w->poked = l;
		}
		break;
	case COW__SCHED_PTR_STORE: case COW__SCHED_COUNTER_STORE:
		w->pending = ILV_STORE;
		w->ploc = l;
		w->pstore = make_store(t, l, 0, mo, false);
		break;
	default: /* the read-modify-writes */
		w->pending = ILV_RMW;
		w->ploc = l;
		w->before = l->h[0].value;
		w->pstore = make_store(t, l, 0, mo, true);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* The lock: the scheduler's model of the default lock (core/rwlock.h,
 * ck_rwlock's algorithm), whose reader count and writer flag are locations
 * here with the values the scheduler gives them. The lock's own handshake
 * between a reader's increment and a writer's claim (store-load fences) is
 * the scheduler's: a reader finds the newest writer flag and the exclusive
 * lock the newest reader count. What the protocol adds,
 * cow__rwlock_wait_readers (a load of the reader count until it reads
 * zero, then an acquire fence), reads any zero that coherence allows, the
 * stale ones included.                                                 */

static struct ilv_loc *
lock_loc(const unsigned *field)
{
	return loc_get(field, 0, *field);
}

static void
lock_init(int t, const cow__rwlock_t *l)
{
	const unsigned *fields[2] = {&l->readers, &l->writer};

	for (int i = 0; i < 2; i++) {
		struct ilv_loc *loc = loc_find(fields[i]);

		if (loc == NULL)
			loc = loc_new(fields[i], 0);
		loc->n = 0;
		memset(loc->seen, 0, sizeof loc->seen);
		loc_append(loc, make_store(t, loc, 0, COW__MO_RELAXED,
		    false));
		loc->init_tid = (int8_t)t;
		loc->init_stamp = loc->h[0].stamp;
	}
}

/* The stores of @loc that @t may read and that say "no reader inside". */
static unsigned
zero_readers(const struct ilv_loc *loc, int t)
{
	unsigned mask = readable(loc, t), zeros = 0;

	for (int k = 0; k < loc->n; k++)
		if ((mask >> k & 1) && loc->h[k].value == 0)
			zeros |= 1u << k;
	return zeros;
}

/* Was @t's last load at @addr, and is there a newer store than the one it
 * read? */
bool
ilv_weak_may_read_newer(int t, const void *addr)
{
	const struct ilv_wthread *w = &W.t[t];

	return w->rloc != NULL && w->rloc->addr == addr &&
	    w->rloc->h[0].seq > w->rseq;
}

void
ilv_weak_spin_resume(int t, const void *addr)
{
	struct ilv_wthread *w = &W.t[t];
	struct ilv_loc *l = w->rloc;
	uint32_t next = 0;

	if (l == NULL || l->addr != addr)
		return;
	/* The oldest store kept that is newer than the one it read. */
	for (int k = 0; k < l->n; k++)
		if (l->h[k].seq > w->rseq)
			next = l->h[k].seq;
	if (next > l->seen[t])
		l->seen[t] = next;
}

bool
ilv_weak_may_wait_readers(int t, const cow__rwlock_t *l)
{
	return zero_readers(lock_loc(&l->readers), t) != 0;
}

void
ilv_weak_lock(int t, enum cow__sched_op op, const cow__rwlock_t *l,
    int phase)
{
	struct ilv_loc *readers, *writer;

	if (op == COW__SCHED_LOCK_INIT) {
		lock_init(t, l);
		return;
	}
	readers = lock_loc(&l->readers);
	writer = lock_loc(&l->writer);
	check_init(readers, t, "lock operation");
	switch (op) {
	case COW__SCHED_READ_LOCK:
		/* Count in, see no writer, then the acquire fence. */
		loc_append(readers, make_store(t, readers,
		    readers->h[0].value + 1, COW__MO_RELAXED, true));
		read_store(t, writer, 0, COW__MO_RELAXED);
		fence(t, COW__MO_ACQUIRE);
		break;
	case COW__SCHED_READ_UNLOCK:
		fence(t, COW__MO_RELEASE);
		loc_append(readers, make_store(t, readers,
		    readers->h[0].value - 1, COW__MO_RELAXED, true));
		break;
	case COW__SCHED_WRITE_LOCK:
		if (phase == 0) {
			loc_append(writer, make_store(t, writer, 1,
			    COW__MO_RELAXED, true));
		} else {
			read_store(t, readers, 0, COW__MO_RELAXED);
			fence(t, COW__MO_ACQUIRE);
		}
		break;
	case COW__SCHED_WRITE_UNLOCK:
		fence(t, COW__MO_RELEASE);
		loc_append(writer, make_store(t, writer, 0, COW__MO_RELAXED,
		    false));
		break;
	case COW__SCHED_WAIT_READERS:
		load(t, readers, zero_readers(readers, t), COW__MO_RELAXED);
		fence(t, COW__MO_ACQUIRE);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Plain accesses.                                                      */

static _Noreturn void
race(int t, bool write, int u, bool other_write, size_t n)
{
	fprintf(stderr, "interleave: data race: the second access:\n");
	__sanitizer_print_stack_trace();
	ilv_fail("data race: thread %c %s %zu bytes that thread %c %s, with "
	    "no happens-before between them", 'a' + t,
	    write ? "writes" : "reads", n, 'a' + u,
	    other_write ? "wrote" : "read");
}

void
ilv_weak_access(int t, const void *addr, size_t n, bool write)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + n;
	uint32_t stamp;
	bool exact = false;

	if (n == 0)
		return;
	stamp = tick(t);
	for (int i = 0; i < W.nregions; i++) {
		struct ilv_region *r = &W.regions[i];

		if (r->hi <= lo || hi <= r->lo)
			continue;
		if (r->wtid >= 0 && !hb(r->wtid, r->wstamp, t))
			race(t, write, r->wtid, true, n);
		if (write)
			for (int u = 0; u < W.nthreads; u++)
				if (u != t && r->rstamp[u] != 0 &&
				    r->rstamp[u] > W.t[t].vc.c[u])
					race(t, true, u, false, n);
		if (r->lo == lo && r->hi == hi)
			exact = true;
		if (write) {
			r->wtid = (int8_t)t;
			r->wstamp = stamp;
			memset(r->rstamp, 0, sizeof r->rstamp);
		} else {
			r->rstamp[t] = stamp;
		}
	}
	if (!exact) {
		struct ilv_region *r;

		if (W.nregions == ILV_MAX_REGIONS)
			ilv_fail("weak-memory mode: more than %d plain "
			    "ranges", ILV_MAX_REGIONS);
		r = &W.regions[W.nregions++];
		memset(r, 0, sizeof *r);
		r->lo = lo;
		r->hi = hi;
		r->wtid = write ? (int8_t)t : -1;
		r->wstamp = stamp;
		if (!write)
			r->rstamp[t] = stamp;
	}
}
