# expect_caught.cmake - run a negative-control binary and pass only if the
# harness caught the fault for the reason the control names: a non-zero
# exit with a cow_stress violation or a sanitizer report in its output, AND
# a line matching EVIDENCE (a regular expression: the control's own kind of
# evidence, not any violation, crash or stall on the way). A clean run
# (the fault went unnoticed), a run with no evidence or only other evidence
# (a leak alone, a crash for another reason), a set-up error (exit status
# 2) or a run that outlives LIMIT seconds fails the test.
#   cmake -DBIN=<binary> -DARGS=a|b|c -DLIMIT=<seconds> -DEVIDENCE=<regex>
#         -P expect_caught.cmake
if(NOT EVIDENCE)
  message(FATAL_ERROR "expect_caught.cmake: EVIDENCE is required: a control "
    "must name the failure it expects")
endif()
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
  message(FATAL_ERROR "caught (exit status ${rc}, ${wall} s) but not for the control's reason: no line matches '${EVIDENCE}':\n  ${shown}\n${err}")
endif()
list(APPEND evidence "required: ${wanted}")
string(REPLACE ";" "\n  " shown "${evidence}")
message("caught (exit status ${rc}, ${wall} s wall):\n  ${shown}")
