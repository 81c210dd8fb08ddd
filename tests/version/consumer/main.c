/*
 * The version three ways: the header this program was compiled with
 * (cowstore/version.h, included alone first, so it must stand alone), the
 * library it runs with (cow_version, cow_version_string) and the CMake
 * package it was configured with (cowstore_VERSION, compiled in as
 * COW_PACKAGE_VERSION). Exit 0 when all agree, 1 with one line per
 * disagreement. An argument replaces the package version (the negative
 * control of check_package.cmake gives a wrong one).
 */
#include <cowstore/version.h>

#include <stdio.h>
#include <string.h>

static int bad;

static void
expect(int ok, const char *what, const char *a, const char *b)
{
	if (!ok) {
		printf("mismatch: %s: %s vs %s\n", what, a, b);
		bad = 1;
	}
}

int
main(int argc, char **argv)
{
	const char *package = argc > 1 ? argv[1] : COW_PACKAGE_VERSION;
	char parts[64], hex[32], run_hex[32];
	unsigned int want_hex = ((unsigned int)COW_VERSION_MAJOR << 16) |
	    ((unsigned int)COW_VERSION_MINOR << 8) | COW_VERSION_PATCH;

	snprintf(parts, sizeof parts, "%d.%d.%d", COW_VERSION_MAJOR,
	    COW_VERSION_MINOR, COW_VERSION_PATCH);
	snprintf(hex, sizeof hex, "0x%06x", (unsigned int)COW_VERSION_HEX);
	snprintf(run_hex, sizeof run_hex, "0x%06x", cow_version());
	expect(strcmp(parts, COW_VERSION_STRING) == 0,
	    "header MAJOR.MINOR.PATCH vs COW_VERSION_STRING", parts,
	    COW_VERSION_STRING);
	expect(COW_VERSION_HEX == want_hex,
	    "header COW_VERSION_HEX vs (major<<16)|(minor<<8)|patch", hex,
	    parts);
	expect(strcmp(cow_version_string(), COW_VERSION_STRING) == 0,
	    "run time cow_version_string() vs header", cow_version_string(),
	    COW_VERSION_STRING);
	expect(cow_version() == COW_VERSION_HEX,
	    "run time cow_version() vs header COW_VERSION_HEX", run_hex, hex);
	expect(strcmp(package, COW_VERSION_STRING) == 0,
	    "CMake package cowstore_VERSION vs header", package,
	    COW_VERSION_STRING);
	if (bad)
		return 1;
	printf("version %s (%s): header, run time and package agree\n",
	    COW_VERSION_STRING, hex);
	return 0;
}
