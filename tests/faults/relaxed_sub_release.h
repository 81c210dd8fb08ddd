/* Weak-memory control (g): no release fence before a share decrement. */
#define COW__FAULT_ON_ref_sub_release 1
#define COW__FAULT_AT_ref_sub_release(...) ((void)0)
