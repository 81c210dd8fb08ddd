# expect_failure.cmake - run PROGRAM INPUT; pass only if it fails AND its
# output contains EXPECT (so an unrelated failure, such as a missing input,
# does not count as the expected finding).
#   cmake -DPROGRAM=... -DINPUT=... -DEXPECT=... -P expect_failure.cmake
execute_process(COMMAND ${PROGRAM} ${INPUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a failure, but ${PROGRAM} passed")
endif()
string(FIND "${out}${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${PROGRAM} failed (${rc}) without '${EXPECT}'")
endif()
message("expected failure found (${rc})")
