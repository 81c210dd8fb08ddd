/*
 * The negative control of check_soname.cmake: a library named like
 * cowstore, built with the old soname rule (the major only), whose SONAME
 * the check must refuse. Its content does not matter.
 */
int cow_soname_control(void);

int
cow_soname_control(void)
{
	return 0;
}
