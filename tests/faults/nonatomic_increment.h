/* Negative control (d): a share increment that can lose an update. */
#define COW__FAULT_ON_ref_increment 1
#define COW__FAULT_AT_ref_increment(...) \
	old = *(volatile unsigned *)&ref->value; \
	COW__FAULT_YIELD(); \
	*(volatile unsigned *)&ref->value = old + 1
