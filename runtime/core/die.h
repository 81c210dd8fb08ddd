/*
 * die.h - unrecoverable internal failures (a broken invariant, a refcount
 * misuse by the caller). Prints file:function@line and the cause, aborts.
 */
#ifndef COW_CORE_DIE_H
#define COW_CORE_DIE_H

#define cow__die(cause) cow__die_at(__FILE__, __func__, __LINE__, (cause))

_Noreturn void cow__die_at(const char *file, const char *func, int line,
    const char *cause);

#endif
