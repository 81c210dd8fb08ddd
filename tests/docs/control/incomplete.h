/* Negative control for check_header_docs.sh: three comments the check must
 * refuse, and one it must accept. */
#ifndef COW_DOCS_CONTROL_INCOMPLETE_H
#define COW_DOCS_CONTROL_INCOMPLETE_H

/**
 * cow_control_incomplete - returns 0. States thread-safety but not the
 * errors: refused.
 * Thread-safety: any thread.
 */
COW_API int cow_control_incomplete(void);

/**
 * cow_control_no_ownership - writes 0 to *out. An out-parameter, and the
 * comment does not say who owns what: refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_control_no_ownership(int *out);

/**
 * cow_control_values_only - @a plus the first entry of @b. Values and a
 * const pointer in, a value out: nothing to own, so no ownership line is
 * asked for. Accepted.
 * Thread-safety: any thread. Errors: none.
 */
COW_API int cow_control_values_only(int a, const int *b);

/**
 * cow_control_ownership_none - writes 0 to *out. The words are all there,
 * but its ownership line is filler, split over two lines: Ownership:
 * none (fills *out). Refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_control_ownership_none(int *out);

#endif
