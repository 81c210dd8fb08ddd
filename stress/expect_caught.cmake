# expect_caught.cmake - run a negative-control binary and pass only if the
# harness caught the fault: a non-zero exit with a cow_stress violation (a
# broken invariant, or death by a signal) or a sanitizer report in its
# output. A clean run (the fault went unnoticed), a run with neither kind of
# evidence (a leak alone, say), a set-up error (exit status 2) or a run that
# outlives LIMIT seconds fails the test. With EVIDENCE (a regular
# expression), the output must also have a line matching it: the control's
# own kind of evidence, not only some violation on the way.
#   cmake -DBIN=<binary> -DARGS=a|b|c -DLIMIT=<seconds> [-DEVIDENCE=<regex>]
#         -P expect_caught.cmake
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
if(EVIDENCE)
  # Line by line (the output's own semicolons would split list items).
  string(REPLACE ";" "," lines "${all}")
  string(REPLACE "\n" ";" lines "${lines}")
  set(wanted "")
  foreach(line IN LISTS lines)
    if(NOT wanted AND line MATCHES "${EVIDENCE}")
      set(wanted "${line}")
    endif()
  endforeach()
  if(NOT wanted)
    string(REPLACE ";" "\n  " shown "${evidence}")
    message(FATAL_ERROR "caught (exit status ${rc}, ${wall} s) but no line matches '${EVIDENCE}':\n  ${shown}\n${err}")
  endif()
  list(APPEND evidence "required: ${wanted}")
endif()
string(REPLACE ";" "\n  " shown "${evidence}")
message("caught (exit status ${rc}, ${wall} s wall):\n  ${shown}")
