/*
 * fault.h - fault points: the places where a negative control breaks the
 * library on purpose, so that a checker (stress, TSan, the interleaving
 * checker, the fuzzers, the debug asserts) can show that it catches the
 * bug.
 *
 * COW__FAULT_POINT(point, step) marks one step of the code and names it.
 * In every build except a fault variant it is the step itself, nothing
 * more. A fault variant is the library compiled with
 * COW_FAULT_HEADER="tests/faults/<fault>.h" (cow_add_library's FAULT
 * argument; debug and sanitizer builds only). That header replaces the
 * steps of the points it breaks, and only those: for a point p it defines
 *
 *     #define COW__FAULT_ON_p 1
 *     #define COW__FAULT_AT_p(...) <the broken step>
 *
 * The broken step is written in the scope of the point (it may use the
 * point's locals, or return) and gets the correct step as its arguments.
 * So the protocol files show the protocol and the names of the places
 * where controls break it; the broken behaviours live in tests/faults/.
 */
#ifndef COW_CORE_FAULT_H
#define COW_CORE_FAULT_H

#ifdef COW_FAULT_HEADER
#include COW_FAULT_HEADER
#endif

/* COW__FAULT_IS_ON(COW__FAULT_ON_p) is 1 when the variant defines
 * COW__FAULT_ON_p as 1, and 0 when it is undefined (the idiom of Linux's
 * IS_ENABLED: the placeholder supplies an extra argument). */
#define COW__FAULT_PLACEHOLDER_1 ~,
#define COW__FAULT_SECOND(ignored, value, ...) value
#define COW__FAULT_SECOND_OF(args) COW__FAULT_SECOND args
#define COW__FAULT_IS_ON(flag) COW__FAULT_IS_ON_(flag)
#define COW__FAULT_IS_ON_(value) \
	COW__FAULT_SECOND_OF((COW__FAULT_PLACEHOLDER_##value 1, 0, ~))

#define COW__FAULT_PICK_0(point) COW__FAULT_STEP
#define COW__FAULT_PICK_1(point) COW__FAULT_AT_##point
#define COW__FAULT_PICK(on, point) COW__FAULT_PICK_(on, point)
#define COW__FAULT_PICK_(on, point) COW__FAULT_PICK_##on(point)
#define COW__FAULT_STEP(...) __VA_ARGS__

#define COW__FAULT_POINT(point, ...) \
	COW__FAULT_PICK(COW__FAULT_IS_ON(COW__FAULT_ON_##point), point) \
	(__VA_ARGS__)

#endif /* COW_CORE_FAULT_H */
