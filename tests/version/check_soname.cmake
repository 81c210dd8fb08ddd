# check_soname.cmake - the shared library's SONAME follows the version
# policy (docs/versions.md): libcowstore.so.MAJOR.MINOR while MAJOR is
# 0 (a minor release may break the ABI), libcowstore.so.MAJOR from 1.0 on.
# The expectation is computed here from the version, not taken from the
# build, so a build that applies another rule fails.
#   cmake -DREADELF=<readelf> -DLIBRARY=<libcowstore.so...> -DVERSION=<x.y.z>
#         -P check_soname.cmake
# Prints "SONAME <name> (version <x.y.z>)" and exits 0, or fails naming both.
if(NOT VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$")
  message(FATAL_ERROR "VERSION '${VERSION}' is not major.minor.patch")
endif()
if(CMAKE_MATCH_1 EQUAL 0)
  set(expect "libcowstore.so.${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
else()
  set(expect "libcowstore.so.${CMAKE_MATCH_1}")
endif()
execute_process(COMMAND ${READELF} -d ${LIBRARY}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "${READELF} -d ${LIBRARY} failed (${rc}):\n${err}")
endif()
if(NOT out MATCHES "\\(SONAME\\)[^\n]*\\[([^]\n]*)\\]")
  message(FATAL_ERROR "${LIBRARY} has no SONAME:\n${out}")
endif()
set(soname "${CMAKE_MATCH_1}")
if(NOT soname STREQUAL expect)
  message(FATAL_ERROR "SONAME ${soname}, expected ${expect} for version ${VERSION}")
endif()
# The link a program loads by that name sits beside the library.
get_filename_component(dir ${LIBRARY} DIRECTORY)
if(NOT EXISTS ${dir}/${soname})
  message(FATAL_ERROR "SONAME ${soname}, but ${dir}/${soname} does not exist")
endif()
message("SONAME ${soname} (version ${VERSION})")
