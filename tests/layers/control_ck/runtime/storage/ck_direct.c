/*
 * The negative control of layers.includes' ck rule: a storage file that
 * includes a ck header itself instead of going through runtime/core/.
 * check_includes.cmake must refuse it. Never compiled.
 */
#include "core/refcount.h"
#include <ck_pr.h>
