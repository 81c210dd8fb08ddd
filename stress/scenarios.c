/*
 * scenarios.c - the table of scenarios, in the order they run.
 */
#include "harness.h"

extern const struct stress_scenario stress_scn_clone_storm;
extern const struct stress_scenario stress_scn_materialize_race;
extern const struct stress_scenario stress_scn_wrap_race;
extern const struct stress_scenario stress_scn_release_vs_materialize;
#ifdef STRESS_HAVE_TENSOR_MIX
extern const struct stress_scenario stress_scn_tensor_mix;
#endif
#ifdef STRESS_HAVE_BOUNDARY
extern const struct stress_scenario stress_scn_boundary;
#endif
#ifdef STRESS_HAVE_CHECKPOINT
extern const struct stress_scenario stress_scn_checkpoint;
#endif

const struct stress_scenario *const stress_scenarios[] = {
	&stress_scn_clone_storm,
	&stress_scn_materialize_race,
	&stress_scn_wrap_race,
	&stress_scn_release_vs_materialize,
#ifdef STRESS_HAVE_TENSOR_MIX
	&stress_scn_tensor_mix,
#endif
#ifdef STRESS_HAVE_BOUNDARY
	&stress_scn_boundary,
#endif
#ifdef STRESS_HAVE_CHECKPOINT
	&stress_scn_checkpoint,
#endif
};

const unsigned stress_nscenarios =
    sizeof stress_scenarios / sizeof stress_scenarios[0];
