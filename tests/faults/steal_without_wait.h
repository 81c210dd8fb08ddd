/* Negative control (a): steal while copiers may still read the data, and a
 * window before each copy to let it happen. */
#define COW__FAULT_ON_wait_for_copiers 1
#define COW__FAULT_AT_wait_for_copiers(...) ((void)ctx)
#define COW__FAULT_ON_copy_bytes 1
#define COW__FAULT_AT_copy_bytes(...) COW__FAULT_YIELD(); __VA_ARGS__
