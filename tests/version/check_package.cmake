# check_package.cmake - the version a consumer sees in an install of the
# build tree (PREFIX; the ctest install.prefix fills it): the installed
# version.h, the library it loads and the CMake package agree
# (consumer/main.c), the program needs the soname of the version policy,
# the package's compatibility follows the same policy (docs/versions.md),
# and cowstore.pc and cowstore-static.pc carry the same version.
#   cmake -DSOURCE_DIR=<repository> -DPREFIX=<install prefix>
#         -DWORK=<scratch dir> -DC_COMPILER=<cc> -DREADELF=<readelf>
#         -DVERSION=<x.y.z> -P check_package.cmake
set(prefix ${PREFIX})
set(consumer ${WORK}/version-consumer)
set(probe ${WORK}/version-probe)
file(REMOVE_RECURSE ${consumer} ${probe})
if(NOT VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$")
  message(FATAL_ERROR "VERSION '${VERSION}' is not major.minor.patch")
endif()
set(major ${CMAKE_MATCH_1})
set(minor ${CMAKE_MATCH_2})
set(patch ${CMAKE_MATCH_3})
if(major EQUAL 0)
  set(soname "libcowstore.so.${major}.${minor}")
else()
  set(soname "libcowstore.so.${major}")
endif()

if(NOT EXISTS ${prefix}/include/cowstore/cowstore.h)
  message(FATAL_ERROR "nothing installed in ${prefix} (the test install.prefix installs it)")
endif()

# The generated header is installed with the others; its template is not.
if(NOT EXISTS ${prefix}/include/cowstore/version.h)
  message(FATAL_ERROR "include/cowstore/version.h is not installed")
endif()
if(EXISTS ${prefix}/include/cowstore/version.h.in)
  message(FATAL_ERROR "the template include/cowstore/version.h.in is installed")
endif()

# A consumer that asks for MAJOR.MINOR builds, needs the soname and finds
# header, run time and package in agreement.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/version/consumer
    -B ${consumer} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCOW_REQUEST=${major}.${minor}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "consumer configure failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${consumer}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "consumer build failed:\n${out}")
endif()
execute_process(COMMAND ${consumer}/version_consumer
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc OR NOT out MATCHES "version ${VERSION} [^\n]*: header, run time and package agree")
  message(FATAL_ERROR "versions disagree (exit ${rc}):\n${out}")
endif()
message("${out}")
# Negative control: the same program told a wrong package version must say
# so and fail.
execute_process(COMMAND ${consumer}/version_consumer ${major}.${minor}.99
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 1 OR NOT out MATCHES "mismatch: CMake package cowstore_VERSION vs header: ${major}\\.${minor}\\.99 vs ${VERSION}")
  message(FATAL_ERROR "control: a wrong package version went unnoticed (exit ${rc}):\n${out}")
endif()
message("control: a wrong package version is reported")

execute_process(COMMAND ${READELF} -d ${consumer}/version_consumer
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT out MATCHES "\\(NEEDED\\)[^\n]*\\[${soname}\\]")
  message(FATAL_ERROR "the consumer does not need ${soname}:\n${out}${err}")
endif()
message("the consumer needs ${soname}")

# Package compatibility, through find_package itself: which requests the
# installed package accepts.
math(EXPR next_minor "${minor} + 1")
math(EXPR next_major "${major} + 1")
math(EXPR next_patch "${patch} + 1")
set(rows
  "${major}.${minor}|accept"
  "${major}.${minor}.${patch}|accept"
  "${major}.${minor}.${next_patch}|reject"
  "${major}.${next_minor}|reject"
  "${next_major}.0|reject")
if(minor GREATER 0)
  math(EXPR prev_minor "${minor} - 1")
  if(major EQUAL 0)
    # 0.x: another minor is another ABI.
    list(APPEND rows "0.${prev_minor}|reject")
  else()
    list(APPEND rows "${major}.${prev_minor}|accept")
  endif()
endif()
foreach(row ${rows})
  string(REPLACE "|" ";" f "${row}")
  list(GET f 0 request)
  list(GET f 1 want)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/version/consumer
      -B ${probe} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER}
      -DCOW_REQUEST=${request}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(want STREQUAL "accept" AND rc)
    message(FATAL_ERROR "find_package(cowstore ${request}) failed on ${VERSION}:\n${out}")
  endif()
  if(want STREQUAL "reject" AND
     (NOT rc OR NOT out MATCHES "compatible with requested version"))
    message(FATAL_ERROR "find_package(cowstore ${request}) did not refuse ${VERSION} as incompatible (exit ${rc}):\n${out}")
  endif()
  message("find_package(cowstore ${request}) on ${VERSION}: ${want}ed")
endforeach()

# pkg-config's version is the same.
foreach(name cowstore cowstore-static)
  file(GLOB_RECURSE pc ${prefix}/*/pkgconfig/${name}.pc)
  if(NOT pc)
    message(FATAL_ERROR "${name}.pc is not installed")
  endif()
  file(STRINGS ${pc} line REGEX "^Version:")
  if(NOT line STREQUAL "Version: ${VERSION}")
    message(FATAL_ERROR "${name}.pc says '${line}', expected 'Version: ${VERSION}'")
  endif()
  message("${name}.pc: ${line}")
endforeach()
