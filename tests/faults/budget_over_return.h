/* Assert control: a large free gives its budget back one byte more than
 * it charged. */
#define COW__FAULT_ON_uncharged_bytes 1
#define COW__FAULT_AT_uncharged_bytes(...) ((__VA_ARGS__) + 1)
