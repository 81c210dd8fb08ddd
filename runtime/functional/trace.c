/*
 * trace.c - the program the layer executed, as a list of out-of-place ops
 * over values (%id), one line each: the view-free IR a compiler could take.
 * Recording is per thread; lines come from the default allocator. A thread
 * that exits while recording frees its trace (a pthread key destructor).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc/allocator.h"
#include "core/error.h"
#include "functional/functional.h"
#include "tensor/shape.h"

struct cow_functional_trace_s {
	cow_allocator_t *alloc;
	char **lines;
	size_t *sizes;   /* bytes of each line's allocation */
	size_t len, cap;
	bool complete;
};

static pthread_key_t trace_key; /* Read-only after trace_once. */
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static bool trace_key_ok; /* Read-only after trace_once. */

/* A thread exits while recording: nobody can stop its trace any more. */
static void
trace_exit(void *tr)
{
	cow__fn_tls.trace = NULL;
	cow_functional_trace_free(tr);
}

static void
trace_key_create(void)
{
	trace_key_ok = pthread_key_create(&trace_key,
	    trace_exit) == 0;
}

cow_status_t
cow_functional_trace_start(void)
{
	struct cow_functional_trace_s *tr;
	cow_allocator_t *a = cow_allocator_default();

	if (cow__fn_tls.trace != NULL)
		return COW__NAMED(cow__error(COW_EBUSY,
		    "the calling thread is already recording a trace"));
	pthread_once(&trace_once, trace_key_create);
	if (!trace_key_ok)
		return COW__NAMED(cow__error(COW_ENOMEM,
		    "pthread_key_create failed"));
	if ((tr = cow__alloc(a, sizeof *tr)) == NULL)
		return COW__NAMED(COW_ENOMEM);
	memset(tr, 0, sizeof *tr);
	tr->alloc = a;
	tr->complete = true;
	if (pthread_setspecific(trace_key, tr) != 0) {
		cow__free(a, tr, sizeof *tr);
		return COW__NAMED(cow__error(COW_ENOMEM,
		    "pthread_setspecific failed"));
	}
	cow__fn_tls.trace = tr;
	return COW_OK;
}

cow_status_t
cow_functional_trace_stop(cow_functional_trace_t **out)
{
	COW__RETURN_IF_NULL(out);
	if (cow__fn_tls.trace == NULL)
		return COW__NAMED(cow__error(COW_EINVAL,
		    "the calling thread is not recording a trace"));
	*out = cow__fn_tls.trace;
	cow__fn_tls.trace = NULL;
	(void)pthread_setspecific(trace_key, NULL);
	return COW_OK;
}

/* Grow the line arrays; false when out of memory. */
static bool
trace_grow(struct cow_functional_trace_s *tr)
{
	size_t cap = tr->cap == 0 ? 32 : 2 * tr->cap;
	char **lines;
	size_t *sizes;

	if ((lines = cow__alloc(tr->alloc, cap * sizeof *lines)) == NULL)
		return false;
	if ((sizes = cow__alloc(tr->alloc, cap * sizeof *sizes)) == NULL) {
		cow__free(tr->alloc, lines, cap * sizeof *lines);
		return false;
	}
	if (tr->len > 0) {
		memcpy(lines, tr->lines, tr->len * sizeof *lines);
		memcpy(sizes, tr->sizes, tr->len * sizeof *sizes);
	}
	if (tr->cap > 0) {
		cow__free(tr->alloc, tr->lines, tr->cap * sizeof *lines);
		cow__free(tr->alloc, tr->sizes, tr->cap * sizeof *sizes);
	}
	tr->lines = lines;
	tr->sizes = sizes;
	tr->cap = cap;
	return true;
}

void
cow__fn_trace(const char *fmt, ...)
{
	struct cow_functional_trace_s *tr = cow__fn_tls.trace;
	char buf[1024], *line;
	va_list ap;
	size_t n;

	if (tr == NULL || !tr->complete)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	n = strlen(buf) + 1;
	if ((tr->len == tr->cap && !trace_grow(tr)) ||
	    (line = cow__alloc(tr->alloc, n)) == NULL) {
		/* The op goes on; the message names the trace. */
		(void)cow__named(COW_ENOMEM, "cow_functional_trace");
		tr->complete = false;
		return;
	}
	memcpy(line, buf, n);
	tr->lines[tr->len] = line;
	tr->sizes[tr->len] = n;
	tr->len++;
}

size_t
cow_functional_trace_length(const cow_functional_trace_t *tr)
{
	return tr == NULL ? 0 : tr->len;
}

const char *
cow_functional_trace_line(const cow_functional_trace_t *tr, size_t i)
{
	return tr == NULL || i >= tr->len ? "" : tr->lines[i];
}

bool
cow_functional_trace_complete(const cow_functional_trace_t *tr)
{
	return tr != NULL && tr->complete;
}

cow_status_t
cow_functional_trace_print(const cow_functional_trace_t *tr, FILE *f)
{
	COW__RETURN_IF_NULL(tr);
	COW__RETURN_IF_NULL(f);
	for (size_t i = 0; i < tr->len; i++)
		fprintf(f, "%s\n", tr->lines[i]);
	if (!tr->complete)
		fprintf(f, "(trace truncated: out of memory)\n");
	return COW_OK;
}

void
cow_functional_trace_free(cow_functional_trace_t *tr)
{
	if (tr == NULL)
		return;
	for (size_t i = 0; i < tr->len; i++)
		cow__free(tr->alloc, tr->lines[i], tr->sizes[i]);
	if (tr->cap > 0) {
		cow__free(tr->alloc, tr->lines, tr->cap * sizeof *tr->lines);
		cow__free(tr->alloc, tr->sizes, tr->cap * sizeof *tr->sizes);
	}
	cow__free(tr->alloc, tr, sizeof *tr);
}

/* The arguments of a step as the trace shows them. */
const char *
cow__fn_step_args(const struct cow__view_step *s, char *buf, size_t n)
{
	char x[COW__SHAPE_STR_MAX], y[COW__SHAPE_STR_MAX];
	int64_t perm[COW__FN_MAXD];

	switch (s->kind) {
	case COW__STEP_VIEW:
	case COW__STEP_EXPAND:
		snprintf(buf, n, "%s", cow__shape_str(x, s->ndim, s->sizes));
		break;
	case COW__STEP_SELECT:
		snprintf(buf, n, "dim=%d, index=%lld", s->dim,
		    (long long)s->a);
		break;
	case COW__STEP_SLICE:
		snprintf(buf, n, "dim=%d, start=%lld, length=%lld, step=%lld",
		    s->dim, (long long)s->a, (long long)s->b, (long long)s->c);
		break;
	case COW__STEP_NARROW:
		snprintf(buf, n, "dim=%d, start=%lld, length=%lld", s->dim,
		    (long long)s->a, (long long)s->b);
		break;
	case COW__STEP_TRANSPOSE:
		snprintf(buf, n, "%d, %d", s->dim, s->dim2);
		break;
	case COW__STEP_PERMUTE:
		for (int d = 0; d < s->ndim; d++)
			perm[d] = s->perm[d];
		snprintf(buf, n, "%s", cow__shape_str(x, s->ndim, perm));
		break;
	case COW__STEP_UNSQUEEZE:
	case COW__STEP_SQUEEZE:
		snprintf(buf, n, "dim=%d", s->dim);
		break;
	case COW__STEP_SQUEEZE_ALL:
		snprintf(buf, n, "all");
		break;
	case COW__STEP_DIAGONAL:
		snprintf(buf, n, "offset=%lld, dim1=%d, dim2=%d",
		    (long long)s->a, s->dim, s->dim2);
		break;
	case COW__STEP_AS_STRIDED:
		snprintf(buf, n, "size=%s, stride=%s, offset=%lld",
		    cow__shape_str(x, s->ndim, s->sizes),
		    cow__shape_str(y, s->ndim, s->strides), (long long)s->a);
		break;
	default:
		snprintf(buf, n, "?");
		break;
	}
	return buf;
}
