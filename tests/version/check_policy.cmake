# check_policy.cmake - cow_version_policy (cmake/cow_version.cmake) on fixed
# versions: the soname and package compatibility for 0.x and for 1.x and
# later, COW_VERSION_HEX, and the refusal of a component above 255. The
# 1.x rows check the rule the project will use after 1.0, which the build
# itself cannot show today.
#   cmake -DSOURCE_DIR=<repository> -DWORK_DIR=<scratch dir> -P check_policy.cmake
include(${SOURCE_DIR}/cmake/cow_version.cmake)
set(failed 0)
foreach(row
    "0.1.0|0.1|SameMinorVersion|0x000100"
    "0.2.7|0.2|SameMinorVersion|0x000207"
    "0.10.255|0.10|SameMinorVersion|0x000aff"
    "1.0.0|1|SameMajorVersion|0x010000"
    "2.3.4|2|SameMajorVersion|0x020304")
  string(REPLACE "|" ";" f "${row}")
  list(GET f 0 version)
  list(GET f 1 want_so)
  list(GET f 2 want_compat)
  list(GET f 3 want_hex)
  cow_version_policy(${version} so compat hex)
  if(NOT so STREQUAL want_so OR NOT compat STREQUAL want_compat OR
     NOT hex STREQUAL want_hex)
    message(SEND_ERROR "${version}: got soversion ${so}, ${compat}, ${hex}; "
      "want ${want_so}, ${want_compat}, ${want_hex}")
    set(failed 1)
  else()
    message("${version}: libcowstore.so.${so}, ${compat}, COW_VERSION_HEX ${hex}")
  endif()
endforeach()
# A component that does not fit in its byte is refused (in a child cmake,
# since the refusal is a FATAL_ERROR).
file(WRITE ${WORK_DIR}/cow_policy_256.cmake
  "include(${SOURCE_DIR}/cmake/cow_version.cmake)\n"
  "cow_version_policy(0.256.0 so compat hex)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -P ${WORK_DIR}/cow_policy_256.cmake
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "must be 0 to 255")
  message(SEND_ERROR "version 0.256.0 was not refused (exit ${rc}):\n${out}")
  set(failed 1)
else()
  message("0.256.0: refused")
endif()
if(failed)
  message(FATAL_ERROR "version policy: FAILED")
endif()
