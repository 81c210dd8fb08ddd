/*
 * cow_protocol.pml - the copy-or-steal protocol of a COW context, step by
 * step as runtime/storage/cow_ctx.c, runtime/storage/storage.c and the lock
 * in runtime/core/rwlock.h implement it. docs/model.md maps every step to its
 * C line; the bracketed labels ([WRAP], [CLONE], [SOLE], ...) are the ones in
 * the C comments.
 *
 * Actors: NPROC threads (default 3), one storage each, plus at most
 * MAXCLONE extra storages in all. Thread 0 owns storage 0, which starts
 * private (no context). Threads 1..NPROC-1 are born by lazily cloning
 * storage 0, concurrently with each other and with thread 0's own clone of
 * it, so the [WRAP] install races. Then each thread works on the storages it
 * holds (its own, and one clone of it if the budget allows), in any order:
 *   - lazy clone of its own storage while that holds a share (or is
 *     storage 0),
 *   - mutable data access: materialise ([SOLE] steal; or [ALLOC], then
 *     [COPY] or [LAST] steal; the allocation may fail, changing nothing),
 *     then check the bytes and write them,
 *   - release (a storage still shared checks its bytes first).
 * A thread finishes when it holds no storage.
 *
 * The user's side of the contract (docs/design.md): writes to one storage
 * are serialised against reads of it. Storage 0 is read by the clones that
 * create storages 1..NPROC-1, so thread 0 writes or releases storage 0 only
 * once those are done (the `born` barrier: a join).
 *
 * Granularity: one step is one access to shared memory, or one atomic
 * read-modify-write (fetch-and-add, fetch-and-store, compare-and-swap);
 * `atomic { check; access }` only attaches a check to an access. The model
 * is sequentially consistent (docs/model.md, "Limits").
 *
 * Compile-time variants (spin -D...):
 *   NPROC=n, MAXCLONE=n	size of the instance
 *   MAXFAIL=n			at most n allocation failures in all (default:
 *				unbounded, each one changes nothing)
 *   MODEL_FAULT_DECREMENT_BEFORE_LOCK, MODEL_FAULT_STEAL_WITHOUT_WAIT,
 *   MODEL_FAULT_SKIP_MATERIALIZE, MODEL_FAULT_NONATOMIC_INCREMENT
 *				the C faults (tests/faults/): negative controls
 *   MODEL_FAULT_LAST_KEEPS_READ_LOCK
 *				[LAST] forgets its read unlock: a liveness
 *				negative control (not a C switch)
 *   MODEL_LOCK_ABSTRACT	any shared/exclusive lock whose calls are one
 *				atomic step each
 *   MODEL_LOCK_BRLOCK		ck_brlock as the library once used it (a reader
 *				record registered for one critical section):
 *				a lock whose calls are several steps, kept as
 *				a negative control
 *   MODEL_NO_EXCL_CHECK	drop the property "only the last share holder
 *				takes the exclusive lock" (so the brlock
 *				control shows the use after free it leads to)
 *   MODEL_BORROWED		the original is borrowed memory (no deleter):
 *				only storage 0, the storage created over it,
 *				may take it back; every other materialiser
 *				copies, and the last share's copy frees it
 *				([KEEP])
 *   MODEL_READ_ONLY		the original is read-only memory: nobody takes
 *				it; storage 0's first write copies too
 *   MODEL_FAULT_STEAL_BORROWED
 *				with MODEL_BORROWED: every materialiser may
 *				take the original (the library before the
 *				ownership rules): a negative control
 *   PROBE=mask			probes that fail when reached (vacuity check)
 */

#ifndef NPROC
#define NPROC		3
#endif
#ifndef MAXCLONE
#define MAXCLONE	1
#endif

#define NULL		0
#define NCTX		(NPROC + 1)	/* context t + 1 is created by thread t */

/* What a thread's storage slot holds. */
#define NONE		0
#define SHARED		1	/* a storage with a context, or storage 0 */
#define PRIV_ORIG	2	/* private: owns the original buffer */
#define PRIV_COPY	3	/* private: owns a copy */
#define FAILED		4	/* materialise returned COW_ENOMEM */

/* The original bytes, and what thread t writes into a buffer it owns. */
#define BYTE0		7
#define BYTE1		9
#define MARK(t)		(20 + (t))

/* Reachability probes. -DPROBE=mask turns probe n into a failing assertion
 * when bit n of mask is set. tests/model checks that each P_ probe is
 * reached and that the U_ probes are not (facts the design relies on). */
#define P_WRAP_WON	1	/* [WRAP] installed its context */
#define P_WRAP_LOST	2	/* [WRAP] lost the race, discarded its own */
#define P_SOLE		3	/* [SOLE] steal */
#define P_ALLOC_FAILED	4	/* [ALLOC] failed */
#define P_COPY		5	/* [COPY] */
#define P_LAST		6	/* [LAST] steal after a decrement */
#define P_FREE		7	/* [RELEASE] of the last share, [FREE] */
#define P_WAITED	8	/* [WAIT] found a copier inside */
#define P_PRIVATE0	9	/* storage 0 written, never cloned */
#define P_CLONE2	10	/* a [CLONE] of a storage born by a clone */
#define U_READER_MET_WRITER 11	/* a copier's trylock saw the writer flag */
#define P_KEEP		12	/* [KEEP] the last share copied, then freed */
#ifdef PROBE
#define REACHED(n)	assert(((PROBE >> n) & 1) == 0)
#else
#define REACHED(n)	skip
#endif

/* ---------------------------------------------------------------- */
/* Shared state                                                      */

/* cow__ctx_t, one per thread that may allocate one in [WRAP]. */
bool	ctx_alive[NCTX];	/* allocated and not freed */
byte	shares[NCTX];		/* cow__refcount_t shares */
byte	writer[NCTX];		/* cow__rwlock_t writer */
byte	n_readers[NCTX];	/* cow__rwlock_t readers */

byte	s0ctx = NULL;		/* storage 0's ctx field (installed by CAS) */
#ifdef MODEL_LOCK_BRLOCK
byte	rd_reg[NPROC];		/* context thread t's record is registered on */
byte	rd_n[NPROC];		/* n_readers of thread t's record (its stack) */
#endif
byte	orig[2];		/* the original buffer's bytes */

/* Ghost state: observation and scheduling only, never read by the
 * protocol. */
byte	orig_frees;		/* times the original was freed */
byte	orig_owner;		/* 0: shared or unused; t + 1: private to
				 * thread t, which may write it */
byte	n_copying;		/* copiers between their first and last read */
byte	live_copies;		/* copy buffers allocated and not freed */
byte	born;			/* threads done with their birth clone */
byte	clones;			/* extra lazy clones so far */
byte	finished;		/* threads holding no storage any more */
#ifdef MAXFAIL
byte	fails;			/* allocation failures so far */
#define ALLOC_FAILS	atomic { fails < MAXFAIL -> fails++ }
#else
#define ALLOC_FAILS	true
#endif

/* Only the last share holder ever takes the exclusive lock: the thread that
 * holds the one remaining share and steals it ([SOLE]: sole = 1, shares 1),
 * or the one that dropped the count to zero ([LAST], the last [RELEASE]:
 * sole = 0, shares 0). Checked wherever a lock claims its exclusive side,
 * for every modelled lock. */
#ifndef MODEL_NO_EXCL_CHECK
#define EXCL_BY_LAST(c)	assert(shares[c] == sole)
#else
#define EXCL_BY_LAST(c)	skip
#endif

/* Every access to a context checks it is still allocated. */
#define CTX_ACCESS(c)	assert(c != NULL && ctx_alive[c])
/* Reading the shared original: not freed, not owned (and so possibly being
 * written) by a stealer. */
#define SHARED_READ	assert(orig_frees == 0 && orig_owner == 0)
/* Its private owner writes it: nobody is copying it; and only a storage
 * that may write it (borrowed memory: storage 0, its home, which thread 0
 * alone holds; read-only memory: none). */
#if defined(MODEL_READ_ONLY)
#define MAY_WRITE_ORIG	false
#elif defined(MODEL_BORROWED)
#define MAY_WRITE_ORIG	(me == 0)
#else
#define MAY_WRITE_ORIG	true
#endif
#define OWNER_WRITE	assert(orig_frees == 0 && orig_owner == me + 1 && \
			    n_copying == 0 && MAY_WRITE_ORIG)

/* cow__buffer_may_write for slot k's storage: may it take the original? */
#if defined(MODEL_READ_ONLY)
#define MAY_TAKE(k)	false
#elif defined(MODEL_BORROWED) && !defined(MODEL_FAULT_STEAL_BORROWED)
#define MAY_TAKE(k)	(me == 0 && k == 0)
#else
#define MAY_TAKE(k)	true
#endif

/* ---------------------------------------------------------------- */
/* runtime/core/refcount.h and runtime/core/rwlock.h                 */

/* cow__ref_get: ck_pr_faa_uint(+1); dies on a dead object. */
inline ref_get(c)
{
#ifdef MODEL_FAULT_NONATOMIC_INCREMENT
	atomic { CTX_ACCESS(c); v = shares[c] };
	atomic { CTX_ACCESS(c); shares[c] = v + 1 };
#else
	atomic { CTX_ACCESS(c); v = shares[c]; shares[c]++ };
#endif
	assert(v != 0);
	v = 0
}

/* cow__ref_sub: ck_pr_faa_uint(-1), returns the value before; dies below
 * zero. (cow__ref_put is ref_sub(...) == 1.) */
inline ref_sub(c, old)
{
	atomic { CTX_ACCESS(c); old = shares[c]; assert(old != 0); shares[c]-- }
}

#ifdef MODEL_LOCK_ABSTRACT
/* Any shared/exclusive lock, each operation one atomic step. The other
 * choices of rwlock.h (COW_LOCK_PFLOCK, COW_LOCK_PTHREAD) are this, provided
 * a shared unlock touches the lock no more after the step that releases it
 * (rwlock.h; MODEL_LOCK_BRLOCK below is a lock that does). A lock call on a
 * freed context goes on to fail its access check instead of blocking. */
inline read_lock(c)
{
	atomic {
		writer[c] == 0 || !ctx_alive[c] ->
		CTX_ACCESS(c);
		n_readers[c]++
	}
}

inline read_unlock(c)
{
	atomic { CTX_ACCESS(c); assert(n_readers[c] > 0); n_readers[c]-- }
}

inline write_lock(c)
{
	atomic {
		(writer[c] == 0 && n_readers[c] == 0) || !ctx_alive[c] ->
		CTX_ACCESS(c);
		EXCL_BY_LAST(c);
		writer[c] = 1
	}
}

inline write_unlock(c)
{
	atomic { CTX_ACCESS(c); writer[c] = 0 }
}

/* cow__rwlock_wait_readers of the other locks: take and drop it. */
inline wait_readers(c)
{
	write_lock(c);
	write_unlock(c)
}

#elif defined(MODEL_LOCK_BRLOCK)
/* ck_brlock (ck_brlock.h), used the way the library once did: each copier
 * puts a reader record on its stack and registers it around its one
 * critical section (register + lock, unlock + unregister). The writer flag
 * and the list of registered records live in the context; a record (rd_n,
 * one per thread) lives on the copier's stack and is never freed.
 * Registering and unregistering take the writer flag themselves. */
inline br_write_lock(c)
{
	do						/* fas(writer) */
	:: atomic { CTX_ACCESS(c); EXCL_BY_LAST(c); v = writer[c]; writer[c] = 1 };
		if
		:: v == 0 -> break
		:: else
		fi
	od;
	t = 0;						/* walk br->readers */
	do
	:: t < NPROC ->
		atomic { CTX_ACCESS(c); v = (rd_reg[t] == c) };
		if
		:: v -> (rd_n[t] == 0)			/* wait for the record */
		:: else
		fi;
		t++
	:: else -> break
	od;
	t = 0;
	v = 0
}

inline br_write_unlock(c)
{
	atomic { CTX_ACCESS(c); writer[c] = 0 }
}

/* ck_brlock_read_register, then ck_brlock_read_lock. */
inline read_lock(c)
{
	br_write_lock(c);
	atomic { CTX_ACCESS(c); rd_reg[me] = c };
	br_write_unlock(c);
	do
	:: atomic { (writer[c] == 0 || !ctx_alive[c]) -> CTX_ACCESS(c) };
		rd_n[me] = 1;
		atomic { CTX_ACCESS(c); v = writer[c] };
		if
		:: v == 0 -> break
		:: else -> rd_n[me] = 0
		fi
	od;
	v = 0
}

/* ck_brlock_read_unlock (the record only), then
 * ck_brlock_read_unregister: the writer flag again, after this thread has
 * left as a reader. */
inline read_unlock(c)
{
	rd_n[me] = 0;
	br_write_lock(c);
	atomic { CTX_ACCESS(c); rd_reg[me] = 0 };
	br_write_unlock(c)
}

inline write_lock(c)
{
	br_write_lock(c)
}

inline write_unlock(c)
{
	br_write_unlock(c)
}

inline wait_readers(c)
{
	write_lock(c);
	write_unlock(c)
}

#else /* the default lock of rwlock.h (ck_rwlock's algorithm) */

/* cow__rwlock_read_lock, default lock: cow__rwlock_own_read_lock,
 * while (!cow__rwlock_read_trylock(l)) backoff. */
inline read_lock(c)
{
	do
	:: atomic { CTX_ACCESS(c); v = writer[c] };
		if
		:: v != 0 -> REACHED(U_READER_MET_WRITER) /* false */
		:: else ->
			atomic { CTX_ACCESS(c); n_readers[c]++ };
			atomic { CTX_ACCESS(c); v = writer[c] };
			if
			:: v == 0 -> break		/* true */
			:: else ->			/* false */
				REACHED(U_READER_MET_WRITER);
				atomic { CTX_ACCESS(c); n_readers[c]-- }
			fi
		fi
	od;
	v = 0
}

/* cow__rwlock_read_unlock: cow__rwlock_own_read_unlock, ck_pr_dec(readers). */
inline read_unlock(c)
{
	atomic { CTX_ACCESS(c); assert(n_readers[c] > 0); n_readers[c]-- }
}

/* cow__rwlock_wait_readers (default lock): the last share holder waits until
 * no copier is inside, loading readers; it never claims the writer flag,
 * because no copier can arrive (property 8, checked here). */
inline wait_readers(c)
{
	do
	:: atomic { CTX_ACCESS(c); EXCL_BY_LAST(c); v = n_readers[c] };
		if
		:: v == 0 -> break
		:: else -> REACHED(P_WAITED)
		fi
	od;
	v = 0
}

#endif

/* ---------------------------------------------------------------- */
/* runtime/storage/cow_ctx.c                                         */

/* ctx_destroy (and cow__ctx_discard): free the context. */
inline ctx_destroy(c)
{
	atomic {
		CTX_ACCESS(c);
		ctx_alive[c] = false;
		shares[c] = 0;
		writer[c] = 0;
		n_readers[c] = 0
	}
}

/* [WAIT] ctx_wait_for_copiers */
inline wait_for_copiers(c)
{
#ifndef MODEL_FAULT_STEAL_WITHOUT_WAIT
	wait_readers(c)
#else
	skip
#endif
}

/* [STEAL] ctx_steal: wait, take ctx->buf, free the context. */
inline ctx_steal(c)
{
	wait_for_copiers(c);
	atomic { CTX_ACCESS(c); orig_owner = me + 1 };	/* *out = ctx->buf */
	ctx_destroy(c)
}

/* cow__ctx_unshare_last: wait for copiers, free the original and the
 * context. */
inline ctx_unshare_last(c)
{
	wait_for_copiers(c);				/* [WAIT] */
	atomic {					/* [FREE] */
		CTX_ACCESS(c);
		assert(orig_frees == 0 && n_copying == 0);
		orig_frees++
	};
	ctx_destroy(c)
}

/* cow__ctx_unshare */
inline ctx_unshare(c)
{
	ref_sub(c, before);				/* [RELEASE] */
	if
	:: before == 1 ->
		ctx_unshare_last(c);
		REACHED(P_FREE)
	:: else
	fi;
	before = 0
}

/* [COPY] memcpy(copy.data, ctx->buf.data, copy.nbytes): load ctx->buf.data,
 * then read the bytes one by one. */
inline copy_bytes(c)
{
	atomic { CTX_ACCESS(c); n_copying++ };
	atomic { SHARED_READ; r0 = orig[0] };
	atomic { SHARED_READ; r1 = orig[1]; n_copying-- }
}

/* cow__ctx_materialize (@may: may_take): sets res to PRIV_ORIG, PRIV_COPY
 * or FAILED. */
inline ctx_materialize(c, may)
{
	if
	:: may -> atomic { CTX_ACCESS(c); v = shares[c] }	/* [SOLE] */
	:: else -> v = 0
	fi;
	if
	:: v == 1 ->
		v = 0;
		REACHED(P_SOLE);
		sole = 1;				/* ghost: we hold it */
		ctx_steal(c);
		sole = 0;
		res = PRIV_ORIG
	:: else ->
		v = 0;
		atomic { CTX_ACCESS(c) };		/* ctx->buf.nbytes */
		if					/* [ALLOC] */
		:: ALLOC_FAILS -> res = FAILED; REACHED(P_ALLOC_FAILED)
		:: true -> live_copies++; res = PRIV_COPY
		fi;
		if
		:: res == PRIV_COPY ->
#ifdef MODEL_FAULT_DECREMENT_BEFORE_LOCK
			ref_sub(c, before);
			read_lock(c);
#else
			read_lock(c);			/* [RLOCK] */
			ref_sub(c, before);		/* [DEC] */
#endif
			if
			:: before > 1 || !may ->
				copy_bytes(c);		/* [COPY] */
				read_unlock(c);		/* [RUNLOCK] */
				assert(r0 == BYTE0 && r1 == BYTE1);
				REACHED(P_COPY);
				r0 = 0;
				r1 = 0;
				if			/* [KEEP] */
				:: before == 1 ->
					ctx_unshare_last(c);
					REACHED(P_KEEP)
				:: else
				fi
			:: else ->			/* [LAST] */
#ifndef MODEL_FAULT_LAST_KEEPS_READ_LOCK
				read_unlock(c);
#endif
				live_copies--;		/* free the copy */
				REACHED(P_LAST);
				ctx_steal(c);
				res = PRIV_ORIG
			fi;
			before = 0
		:: else
		fi
	fi
}

/* ---------------------------------------------------------------- */
/* runtime/storage/storage.c                                         */

/* A slot's ctx field: storage 0's is shared (clones CAS it); any other
 * storage's is private to the thread that holds the storage. */
#define CTX_FIELD(k)	((me == 0 && k == 0) -> s0ctx : sc[k])

/* cow_storage_lazy_clone of storage 0 (from0, by a thread being born) or of
 * this thread's slot k, into slot d. */
inline lazy_clone(from0, k, d)
{
	ok = true;
	if						/* dst = cow__alloc */
	:: ALLOC_FAILS -> ok = false
	:: true
	fi;
	if
	:: ok ->
		if					/* cow__ptr_load */
		:: from0 -> c = s0ctx
		:: else -> c = CTX_FIELD(k)
		fi;
		if
		:: c == NULL ->				/* [WRAP] */
			if				/* cow__ctx_new */
			:: ALLOC_FAILS -> ok = false
			:: true ->
				fresh = me + 1;
				atomic {		/* unpublished */
					assert(!ctx_alive[fresh]);
					ctx_alive[fresh] = true;
					shares[fresh] = 2; /* src, dst */
					writer[fresh] = 0;
					n_readers[fresh] = 0
				};
				atomic {		/* cow__ptr_install */
					if
					:: s0ctx == NULL -> s0ctx = fresh
					:: else
					fi;
					c = s0ctx
				};
				if
				:: c != fresh ->
					REACHED(P_WRAP_LOST);
					ctx_destroy(fresh) /* discard */
				:: else ->
					won = true;	/* dst's share counted */
					REACHED(P_WRAP_WON)
				fi;
				fresh = 0
			fi
		:: else
		fi
	:: else
	fi;
	if
	:: ok ->
		/* dst->data = src->data (no context access), then, last: */
		if
		:: !won -> ref_get(c)			/* [CLONE] */
		:: else
		fi;
		if
		:: !from0 && sc[k] != NULL -> REACHED(P_CLONE2)
		:: else
		fi;
		sc[d] = c;
		sst[d] = SHARED
	:: else
	fi;
	won = false;
	c = 0
}

/* After a successful mutable access: the owner of the original checks its
 * bytes and writes them (a copy was checked when made; nobody else sees
 * it). */
inline use_private(k)
{
	if
	:: sst[k] == PRIV_ORIG ->
		atomic {
			assert(orig_frees == 0 && orig_owner == me + 1);
			assert(orig[0] == BYTE0 && orig[1] == BYTE1)
		};
		atomic { OWNER_WRITE; orig[0] = MARK(me) };
		atomic { OWNER_WRITE; orig[1] = MARK(me) }
	:: else
	fi
}

/* cow_storage_mutable_data on slot k, then the caller's writes. */
inline mutable_data(k)
{
	c = CTX_FIELD(k);				/* cow__ptr_load */
#ifdef MODEL_FAULT_SKIP_MATERIALIZE
	/* Writes go straight into the data, shared or not. */
	atomic { assert(orig_frees == 0); orig_owner = me + 1 };
	sst[k] = PRIV_ORIG;
	use_private(k);
#else
	if
	:: c != NULL ->
		ctx_materialize(c, MAY_TAKE(k));
		if
		:: res != FAILED ->
			sst[k] = res;
			if			/* cow__ptr_store(ctx, NULL) */
			:: me == 0 && k == 0 -> s0ctx = NULL
			:: else -> sc[k] = NULL
			fi;
			use_private(k)
		:: else
		fi
	:: else ->
		/* Storage 0, never cloned: private already. */
		REACHED(P_PRIVATE0);
#ifdef MODEL_READ_ONLY
		/* storage_copy_private: a copy replaces the original, whose
		 * owner gets it back. */
		if
		:: ALLOC_FAILS
		:: true ->
			live_copies++;
			atomic { SHARED_READ; orig_frees++ };
			sst[k] = PRIV_COPY
		fi
#else
		atomic { assert(orig_owner == 0); orig_owner = me + 1 };
		sst[k] = PRIV_ORIG;
		use_private(k)
#endif
	fi;
#endif
	c = 0;
	res = 0
}

/* cow_storage_release of slot k (its only handle: refs drops to zero). */
inline storage_release(k)
{
	if
	:: sst[k] == SHARED ->			/* its last look at the bytes */
		atomic {
			SHARED_READ;
			assert(orig[0] == BYTE0 && orig[1] == BYTE1)
		}
	:: else
	fi;
	c = CTX_FIELD(k);				/* cow__ptr_load */
	if
	:: c != NULL -> ctx_unshare(c)
	:: else ->				/* cow__buffer_free(&s->buf) */
		if
		:: sst[k] == PRIV_COPY -> live_copies--
		:: else ->			/* the original: stolen, or
						 * storage 0 never cloned */
			atomic { assert(orig_frees == 0); orig_frees++ }
		fi
	fi;
	sst[k] = NONE;
	sc[k] = NULL;
	c = 0
}

/* The user's contract: storage 0 is written or released only after the
 * clones that read it are done. */
#define MAY_WRITE(k)	(me != 0 || k != 0 || born == NPROC - 1)

proctype storage_thread(byte me)
{
	byte sst[2];		/* slot state */
	byte sc[2];		/* slot ctx field (unused for storage 0) */
	byte c, v, before, fresh, res, r0, r1;
	byte sole;		/* ghost: stealing the one share we hold */
	bool won;		/* [WRAP] installed our context */
#ifdef MODEL_LOCK_BRLOCK
	byte t;
#endif
	bool ok;

	if
	:: me == 0 -> sst[0] = SHARED		/* storage 0, no context */
	:: else ->
		lazy_clone(true, 0, 0);		/* born from storage 0 */
		born++
	fi;
	do
	:: sst[0] == NONE && sst[1] == NONE -> break
	:: atomic { clones < MAXCLONE && sst[0] == SHARED && sst[1] == NONE ->
		clones++ };
		lazy_clone(false, 0, 1)
	:: sst[0] == SHARED && MAY_WRITE(0) -> mutable_data(0)
	:: sst[1] == SHARED -> mutable_data(1)
	:: sst[0] != NONE && MAY_WRITE(0) -> storage_release(0)
	:: sst[1] != NONE -> storage_release(1)
	od;
	finished++
}

init
{
	byte i;

	atomic {
		orig[0] = BYTE0;
		orig[1] = BYTE1;
		for (i : 0 .. NPROC - 1) {
			run storage_thread(i)
		}
	};
	(finished == NPROC);
	/* The original freed exactly once; no context or copy leaked. */
	assert(orig_frees == 1);
	assert(live_copies == 0);
	for (i : 1 .. NCTX - 1) {
		assert(!ctx_alive[i])
	}
}

/* Every thread finishes: pan -a -f (weak fairness), see docs/model.md. */
ltl all_finish { <> (finished == NPROC) }
