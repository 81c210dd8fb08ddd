/*
 * variant.c - compiled into each cow_stress binary with STRESS_VARIANT set
 * to the library it links: "cowstore" or a negative-control fault build.
 */
#ifndef STRESS_VARIANT
#define STRESS_VARIANT "cowstore"
#endif

extern const char stress_variant[];
const char stress_variant[] = STRESS_VARIANT;
