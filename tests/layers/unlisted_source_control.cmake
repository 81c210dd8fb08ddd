# unlisted_source_control.cmake - the control of cow_check_listed
# (cmake/cow_check_listed.cmake): the unit tests' folder checked against
# their list without its first entry must stop with the check's message.
#   cmake -DROOT=<source dir> -P unlisted_source_control.cmake
cmake_policy(VERSION 3.25)
include(${ROOT}/cmake/cow_check_listed.cmake)
file(GLOB all ${ROOT}/tests/unit/test_*.c)
list(POP_FRONT all dropped)
cow_check_listed(${ROOT}/tests "unit/test_*.c" "${all}")
message("NOT CAUGHT: ${dropped} is missing from the list and the check passed")
