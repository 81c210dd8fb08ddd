/*
 * thread.c - the layer's state per thread (functional.h, struct
 * cow__fn_thread): the mode, the backend, the next value id and the trace
 * being recorded. A file of its own so that the files that read it (trace,
 * values, groups, dispatch) depend on it and not on each other.
 */
#include "functional/functional.h"

_Thread_local struct cow__fn_thread cow__fn_tls;
