/* Assert control: a materialised storage keeps pointing at the context it
 * stole, and its next write uses the freed context. */
#define COW__FAULT_ON_detach_context 1
#define COW__FAULT_AT_detach_context(...) ((void)0)
