/* Weak-memory control (h): no acquire fence after the last decrement. */
#define COW__FAULT_ON_ref_last_acquire 1
#define COW__FAULT_AT_ref_last_acquire(...) ((void)0)
