/*
 * The negative control of check_public_headers.cmake: a public header that
 * inlines a reference count with ck_pr and so makes every consumer need
 * ConcurrencyKit's headers. The check must name ck_pr.h.
 */
#ifndef COWSTORE_LEAKY_H
#define COWSTORE_LEAKY_H

#include <ck_pr.h>

static inline void
cow_control_leaky_ref(unsigned int *count)
{
	ck_pr_inc_uint(count);
}

#endif /* COWSTORE_LEAKY_H */
