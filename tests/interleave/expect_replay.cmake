# expect_replay.cmake - replay the schedule a negative control found
# (expect_found.cmake wrote it to IN) TIMES times; pass only if every
# replay fails the same way: the same violation line, the same sanitizer
# SUMMARY line (file, line, function; no addresses), the same schedule.
# The first replay runs with --trace, so the log shows the interleaving.
#   cmake -DBIN=<checker> -DIN=<file> -DTIMES=<n> -P expect_replay.cmake
cmake_policy(VERSION 3.25)
if(NOT EXISTS ${IN})
  message(FATAL_ERROR "${IN} missing: its control test did not find a schedule")
endif()
file(READ ${IN} saved)
string(REGEX MATCH "schedule=([^\n]*)" _ "${saved}")
set(schedule "${CMAKE_MATCH_1}")
string(REGEX MATCH "violation=([^\n]*)" _ "${saved}")
set(violation "${CMAKE_MATCH_1}")
string(REGEX MATCH "summary=([^\n]*)" _ "${saved}")
set(summary "${CMAKE_MATCH_1}")
foreach(i RANGE 1 ${TIMES})
  set(trace "")
  if(i EQUAL 1)
    set(trace --trace)
  endif()
  execute_process(COMMAND ${BIN} --replay ${schedule} ${trace}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  set(all "${out}\n${err}")
  if(i EQUAL 1)
    # The steps, and in the weak-memory mode what each load read and
    # the fences between them.
    string(REGEX MATCHALL "(step +[0-9]+|   +(reads|thread)) [^\n]*" steps "${out}")
    string(REPLACE ";" "\n  " steps "${steps}")
    message("replay ${i} of ${schedule}:\n  ${steps}")
  endif()
  if(rc EQUAL 0 OR rc STREQUAL "2" OR rc STREQUAL "3")
    message(FATAL_ERROR "replay ${i} of ${schedule}: exit status ${rc}, not the failure:\n${all}")
  endif()
  string(REGEX MATCH "interleave: VIOLATION: [^\n]*" v "${all}")
  string(REGEX MATCH "SUMMARY: [A-Za-z]+Sanitizer: [^\n]*" s "${all}")
  string(REGEX MATCH "interleave: schedule ([^\n ]*)" line "${all}")
  if(NOT v STREQUAL violation OR NOT s STREQUAL summary OR
     NOT CMAKE_MATCH_1 STREQUAL schedule)
    message(FATAL_ERROR "replay ${i} of ${schedule} failed differently:\n"
      "  expected: ${violation} | ${summary}\n  got:      ${v} | ${s} | schedule ${CMAKE_MATCH_1}\n${all}")
  endif()
endforeach()
message("${TIMES} replays of ${schedule} failed the same way:\n  ${violation}\n  ${summary}")
