/* Negative control (python.control.buffer_without_pin): a writable buffer
 * materialises but forgets the pin; the isolation tests must see a
 * snapshot taken meanwhile change. */
#define COW__FAULT_ON_buffer_pin 1
#define COW__FAULT_AT_buffer_pin(...) cow_tensor_mutable_data(t, &data)
#define COW__FAULT_ON_buffer_pinned 1
#define COW__FAULT_AT_buffer_pinned(...) false
