/*
 * The negative control of layers.includes: a tensor file that includes the
 * functionalization layer above it. check_includes.cmake must refuse it.
 * Never compiled.
 */
#include "core/error.h"
#include "functional/functional.h"
