/* Test variant (python.many_methods): the ops' method table has 64 more
 * methods, each another name for equal(), so that the Tensor type's table
 * holds more than the 64 entries its fixed size once allowed. */
#define COW__FAULT_ON_op_methods_extra 1
#define COW__PAD1(n) { "_extra_" #n, m_equal, METH_O, NULL },
#define COW__PAD8(n) COW__PAD1(n##0) COW__PAD1(n##1) COW__PAD1(n##2) \
	COW__PAD1(n##3) COW__PAD1(n##4) COW__PAD1(n##5) COW__PAD1(n##6) \
	COW__PAD1(n##7)
#define COW__FAULT_AT_op_methods_extra(...) COW__PAD8(0) COW__PAD8(1) \
	COW__PAD8(2) COW__PAD8(3) COW__PAD8(4) COW__PAD8(5) COW__PAD8(6) \
	COW__PAD8(7)
