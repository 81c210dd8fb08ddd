/*
 * The test hooks' header of the control beside it (cowstore.h).
 */
#ifndef COWSTORE_TESTING_H
#define COWSTORE_TESTING_H

int cow_control_test_hook(void);

#endif
