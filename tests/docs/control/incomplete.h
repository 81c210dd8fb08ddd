/* Negative control for check_header_docs.sh: this comment states ownership
 * and thread-safety but not the errors, so the check must fail. */
#ifndef COW_DOCS_CONTROL_INCOMPLETE_H
#define COW_DOCS_CONTROL_INCOMPLETE_H

/**
 * cow_control_incomplete - returns 0.
 * Ownership: none. Thread-safety: any thread.
 */
COW_API int cow_control_incomplete(void);

#endif
