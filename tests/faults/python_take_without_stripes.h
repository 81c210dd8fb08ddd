/* Negative control (python.control.take_without_stripes): a snapshot's
 * take holds no stripe, so it reads tensors while other threads write
 * them; the take test must see a tensor half written. */
#define COW__FAULT_ON_take_stripes 1
#define COW__FAULT_AT_take_stripes(...) (void)0
