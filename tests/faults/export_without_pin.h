/* Negative control (stress scenario boundary): a writable DLPack export
 * materialises the storage but does not pin it, so a lazy clone taken
 * while the consumer holds the pointer shares the bytes it writes. */
#define COW__FAULT_ON_export_pin 1
#define COW__FAULT_AT_export_pin(...) cow__tensor_write_data(t, &p, func)
#define COW__FAULT_ON_export_pinned 1
#define COW__FAULT_AT_export_pinned(...) false
