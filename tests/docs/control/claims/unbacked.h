/* Negative control for check_claims.sh and its table (claims.md beside
 * this header): each comment below says what the check must do with it. */
#ifndef COW_DOCS_CONTROL_UNBACKED_H
#define COW_DOCS_CONTROL_UNBACKED_H

/* cow_control_clone - a copy that costs one atomic increment. Its row
 * quotes a sentence it no longer says: the row is stale, the claim
 * unbacked. */
void cow_control_clone(void);

/* cow_control_publish - once it returns, other threads see the new value.
 * No row: refused. */
void cow_control_publish(void);

/* cow_control_left - copies nothing (tested: docs.claims). The reference
 * belongs in the table: refused. */
void cow_control_left(void);

/* cow_control_view - copies nothing. Its row names a test that does not
 * exist: refused. */
void cow_control_view(void);

/* cow_control_share - no byte is copied. Its row names a test that its
 * program lacks: refused. */
void cow_control_share(void);

/* cow_control_fast - O(1). Its row names a heading that its file lacks:
 * refused. */
void cow_control_fast(void);

/* cow_control_backed - O(1), without copying. Accepted. */
void cow_control_backed(void);

#endif
