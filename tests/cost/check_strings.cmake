# check_strings.cmake - whether FILE (a library) contains TEXT.
#   cmake -DFILE=... -DTEXT=... -DEXPECT=absent|present -P check_strings.cmake
# The debug asserts (core/die.h) carry their messages; a release library
# that holds none of them evaluates none of them.
cmake_policy(VERSION 3.25)
file(STRINGS ${FILE} found REGEX "${TEXT}")
list(LENGTH found n)
set(state absent)
if(n GREATER 0)
  set(state present)
endif()
if(NOT state STREQUAL EXPECT)
  message(FATAL_ERROR "${FILE}: ${n} strings with '${TEXT}', expected ${EXPECT}:\n${found}")
endif()
message("${FILE}: ${n} strings with '${TEXT}' (${EXPECT}, as expected)")
