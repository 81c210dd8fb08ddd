# check_strings.cmake - whether FILE (a library) contains TEXT.
#   cmake -DFILE=... -DTEXT=... -DEXPECT=absent|present -P check_strings.cmake
# The debug asserts (core/die.h) carry their messages; a release library
# that holds none of them evaluates none of them.
cmake_policy(VERSION 3.25)
file(STRINGS ${FILE} found REGEX "${TEXT}")
list(LENGTH found n)
if(EXPECT STREQUAL "absent" AND n GREATER 0)
  message(FATAL_ERROR "${FILE}: ${n} strings with '${TEXT}':\n${found}")
elseif(EXPECT STREQUAL "present" AND n EQUAL 0)
  message(FATAL_ERROR "${FILE}: no string with '${TEXT}'")
endif()
message("${FILE}: ${n} strings with '${TEXT}' (${EXPECT}, as expected)")
