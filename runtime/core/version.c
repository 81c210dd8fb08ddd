/*
 * version.c - the library's version at run time (include/cowstore/version.h,
 * generated from project(VERSION) in CMakeLists.txt).
 */
#include <cowstore/version.h>

unsigned int
cow_version(void)
{
	return COW_VERSION_HEX;
}

const char *
cow_version_string(void)
{
	return COW_VERSION_STRING;
}
