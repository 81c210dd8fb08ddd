/*
 * die.h - unrecoverable internal failures (a broken invariant, a refcount
 * misuse by the caller). Prints file:function@line and the cause, aborts.
 */
#ifndef COW_CORE_DIE_H
#define COW_CORE_DIE_H

#define cow__die(cause) cow__die_at(__FILE__, __func__, __LINE__, (cause))

_Noreturn void cow__die_at(const char *file, const char *func, int line,
    const char *cause);

/*
 * COW__ASSERT(cond, what): an invariant of the design (docs/design.md,
 * "Invariants", and the table of its asserts). Debug builds (no NDEBUG)
 * check it and die with "invariant broken: <what>"; release builds do not
 * evaluate @cond (cost.asserts_absent_in_release). The interleaving
 * checker's build (COW_SCHED) leaves them out too: its scheduler owns the
 * shared words that the conditions would read. COW__DEBUG is defined when
 * they are checked, for the state that only they read.
 */
#if !defined(NDEBUG) && !defined(COW_SCHED)
#define COW__DEBUG 1
#define COW__ASSERT(cond, what) \
	((cond) ? (void)0 : cow__die("invariant broken: " what))
#else
#define COW__ASSERT(cond, what) ((void)sizeof(!(cond)))
#endif

#endif
