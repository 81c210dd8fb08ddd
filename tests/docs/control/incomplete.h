/* Negative control for check_header_docs.sh: each comment below says what
 * the check must do with it. */
#ifndef COW_DOCS_CONTROL_INCOMPLETE_H
#define COW_DOCS_CONTROL_INCOMPLETE_H

/**
 * cow_control_incomplete - returns 0. States thread-safety but not the
 * errors: refused.
 * Thread-safety: any thread.
 */
COW_API int cow_control_incomplete(void);

/**
 * cow_control_name - returns a name, and does not say whose it is or how
 * long it lives: refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API const char *cow_control_name(void);

/**
 * cow_control_new - makes an object into *out, and does not say who
 * releases it: refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API int cow_control_new(int **out);

/**
 * cow_control_release - drops a reference, and does not say so: refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_control_release(int *object);

/**
 * cow_control_values_only - @a plus the first entry of @b, into *out.
 * Values, a const pointer and an out-parameter: nothing moves, so no
 * ownership line is asked for. Accepted.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_control_values_only(int a, const int *b, int *out);

/**
 * cow_control_ownership_none - returns a name. Its ownership line is
 * filler, split over two lines: Ownership:
 * none (a static string). Refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API const char *cow_control_ownership_none(void);

/**
 * cow_control_filled - writes 0 to *out. Ownership: *out is filled;
 * nothing to release. Filler: refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_control_filled(int *out);

/**
 * cow_control_borrowed - writes 0 to *p. Ownership: borrows @p
 * for the call. Filler: refused.
 * Thread-safety: any thread. Errors: none.
 */
COW_API void cow_control_borrowed(int *p);

#endif
