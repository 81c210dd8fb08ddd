/*
 * A negative control of check_public_headers.cmake: an umbrella header
 * that includes the test hooks' header, so that every consumer of the
 * umbrella sees them. The check must name cowstore/testing.h.
 */
#ifndef COWSTORE_COWSTORE_H
#define COWSTORE_COWSTORE_H

#include "testing.h"

#endif
