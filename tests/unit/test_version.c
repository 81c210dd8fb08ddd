/*
 * The version: the generated header, the library's answer at run time and
 * project(VERSION) of CMakeLists.txt (COW_PROJECT_VERSION, passed by
 * tests/CMakeLists.txt) say the same thing. The installed package is
 * checked by tests/version/check_package.cmake.
 */
#include <cowstore/version.h>

#include <stdio.h>

#include <criterion/criterion.h>

TestSuite(version, .timeout = 30.0);

Test(version, header_matches_project_version)
{
	char parts[64];

	snprintf(parts, sizeof parts, "%d.%d.%d", COW_VERSION_MAJOR,
	    COW_VERSION_MINOR, COW_VERSION_PATCH);
	cr_assert_str_eq(COW_VERSION_STRING, COW_PROJECT_VERSION);
	cr_assert_str_eq(parts, COW_PROJECT_VERSION);
}

Test(version, hex_encoding)
{
	cr_assert_eq(COW_VERSION_HEX, ((unsigned int)COW_VERSION_MAJOR << 16) |
	    ((unsigned int)COW_VERSION_MINOR << 8) | COW_VERSION_PATCH);
	/* Usable in the preprocessor, as documented. */
#if COW_VERSION_HEX < 0x000100
	cr_assert_fail("COW_VERSION_HEX %#x is below 0.1.0, the first version",
	    COW_VERSION_HEX);
#endif
}

Test(version, run_time_matches_header)
{
	cr_assert_eq(cow_version(), COW_VERSION_HEX, "cow_version() %#x",
	    cow_version());
	cr_assert_str_eq(cow_version_string(), COW_VERSION_STRING);
}
