/* Negative control for check_claims.sh: each comment below makes a claim;
 * five must be refused, one accepted. */
#ifndef COW_DOCS_CONTROL_UNBACKED_H
#define COW_DOCS_CONTROL_UNBACKED_H

/* cow_control_clone - a copy that costs one atomic increment. Without a
 * reference: refused. */
void cow_control_clone(void);

/* cow_control_publish - once it returns, other threads see the new value.
 * Without a reference: refused. */
void cow_control_publish(void);

/* cow_control_view - copies nothing (tested: docs.no_such_test). Refused:
 * no such ctest. */
void cow_control_view(void);

/* cow_control_share - no byte is copied (tested:
 * unit.storage:no_such_test). Refused: the program exists, the test in it
 * does not. */
void cow_control_share(void);

/* cow_control_fast - O(1) (measured: docs/performance.md#no-such-heading).
 * Refused: the file has no such heading. */
void cow_control_fast(void);

/* cow_control_backed - O(1), without copying (tested: docs.claims;
 * measured: docs/performance.md#targets). Accepted. */
void cow_control_backed(void);

#endif
