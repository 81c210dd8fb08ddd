# expect_caught.cmake - run a negative-control binary and pass only if the
# harness caught the fault: a non-zero exit with a cow_stress violation (a
# broken invariant, or death by a signal) or a sanitizer report in its
# output. A clean run (the fault went unnoticed), a run with neither kind of
# evidence (a leak alone, say), a set-up error (exit status 2) or a run that
# outlives LIMIT seconds fails the test.
#   cmake -DBIN=<binary> -DARGS=a|b|c -DLIMIT=<seconds> -P expect_caught.cmake
string(REPLACE "|" ";" args "${ARGS}")
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${BIN} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT ${LIMIT})
string(TIMESTAMP t1 "%s")
math(EXPR wall "${t1} - ${t0}")
set(all "${out}\n${err}")
string(REGEX MATCHALL
  "cow_stress: (VIOLATION|ThreadSanitizer report)[^\n]*|WARNING: ThreadSanitizer: [^\n]*|ERROR: AddressSanitizer: [^\n]*"
  evidence "${all}")
list(LENGTH evidence nev)
if(rc EQUAL 0)
  message(FATAL_ERROR "NOT CAUGHT: ${BIN} ${args} exited 0 after ${wall} s\n${out}")
endif()
if(rc STREQUAL "2")
  message(FATAL_ERROR "set-up error (exit status 2) after ${wall} s, not a catch:\n${out}\n${err}")
endif()
if(nev EQUAL 0)
  message(FATAL_ERROR "exit status '${rc}' after ${wall} s but no violation or sanitizer report:\n${out}\n${err}")
endif()
string(REPLACE ";" "\n  " shown "${evidence}")
message("caught (exit status ${rc}, ${wall} s wall):\n  ${shown}")
