# expect_found.cmake - a negative control of the interleaving checker: run
# the search on a library built with a fault switch and pass only if it
# finds a violation and prints the schedule that shows it. Saves the
# schedule and the failure (the violation line, and the sanitizer's
# SUMMARY line if a sanitizer reported) to OUT for expect_replay.cmake.
#   cmake -DBIN=<checker> -DARGS=a|b|c -DOUT=<file> -DEXPECT=<regex>
#         -P expect_found.cmake
# Fails on: exit status 0 (the fault went unnoticed), 2 or 3 (usage, or a
# nondeterministic program), no violation line, no schedule line, or a
# failure other than the expected one (EXPECT must match the violation or
# the sanitizer's SUMMARY line).
cmake_policy(VERSION 3.25)
string(REPLACE "|" ";" args "${ARGS}")
file(REMOVE ${OUT})
execute_process(COMMAND ${BIN} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
set(all "${out}\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "NOT FOUND: ${BIN} ${args} exited 0:\n${all}")
endif()
if(rc STREQUAL "2" OR rc STREQUAL "3")
  message(FATAL_ERROR "exit status ${rc} (usage or nondeterminism), not a find:\n${all}")
endif()
string(REGEX MATCH "interleave: VIOLATION: [^\n]*" violation "${all}")
string(REGEX MATCH "interleave: schedule ([^\n ]*)" line "${all}")
set(schedule "${CMAKE_MATCH_1}")
string(REGEX MATCH "SUMMARY: [A-Za-z]+Sanitizer: [^\n]*" summary "${all}")
string(REGEX MATCH "interleave: found in [^\n]*" where "${all}")
if(violation STREQUAL "" OR schedule STREQUAL "")
  message(FATAL_ERROR "exit status '${rc}' without a violation and a schedule:\n${all}")
endif()
if(NOT "${violation}\n${summary}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "found a violation, but not the expected one (/${EXPECT}/):\n${all}")
endif()
file(WRITE ${OUT} "schedule=${schedule}\nviolation=${violation}\nsummary=${summary}\n")
message("found (exit status ${rc}):\n  ${violation}\n  ${summary}\n  ${where}\n  schedule ${schedule}")
