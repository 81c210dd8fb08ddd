/* Weak-memory control (i): a share count read without acquire. */
#define COW__FAULT_ON_ref_load_acquire 1
#define COW__FAULT_AT_ref_load_acquire(...) ((void)0)
