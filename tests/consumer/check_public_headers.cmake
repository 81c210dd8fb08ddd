# check_public_headers.cmake - the public headers as a consumer includes
# them. Each header cowstore/*.h found in the include directories is
# included alone:
# - no public header includes a ConcurrencyKit (ck_*.h) or jemalloc
#   header, directly or through another header, so a consumer needs
#   neither (the compiler lists every file it reads, -M);
# - each compiles alone with -std=c11 -Wall -Wextra -Wpedantic -Werror;
# - the umbrella header cowstore/cowstore.h, when present, includes every
#   other public header but the test hooks' cowstore/testing.h, which it
#   must not include (docs/install.md, "Test hooks").
#   cmake -DCC=<cc> -DINCLUDE_DIRS=<dir>[|<dir>...] -DWORK=<scratch dir>
#         [-DREQUIRE=<header>[|<header>...]] -P check_public_headers.cmake
# REQUIRE: headers (cowstore/x.h) that must be among those found, e.g. in
# an install prefix.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" dirs "${INCLUDE_DIRS}")
string(REPLACE "|" ";" required "${REQUIRE}")
set(flags "")
set(headers "")
foreach(d ${dirs})
  list(APPEND flags -I${d})
  file(GLOB h RELATIVE ${d} ${d}/cowstore/*.h)
  list(APPEND headers ${h})
endforeach()
list(SORT headers)
if(NOT headers)
  message(FATAL_ERROR "no cowstore/*.h in ${INCLUDE_DIRS}")
endif()
foreach(h ${required})
  if(NOT h IN_LIST headers)
    message(FATAL_ERROR "${h} is not in ${INCLUDE_DIRS} (found: ${headers})")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(bad "")
set(umbrella_deps "")
foreach(h ${headers})
  string(MAKE_C_IDENTIFIER ${h} id)
  file(WRITE ${WORK}/${id}.c "#include <${h}>\n")
  execute_process(COMMAND ${CC} -std=c11 -M ${flags} ${WORK}/${id}.c
    RESULT_VARIABLE rc OUTPUT_VARIABLE deps ERROR_VARIABLE err)
  if(rc)
    message(FATAL_ERROR "${h} does not compile alone:\n${err}")
  endif()
  string(REPLACE "\\\n" " " deps "${deps}")
  separate_arguments(deps UNIX_COMMAND "${deps}")
  foreach(f ${deps})
    get_filename_component(name "${f}" NAME)
    if(name MATCHES "^ck_.*\\.h$|jemalloc.*\\.h$")
      string(APPEND bad "  ${h} includes ${f}\n")
    endif()
  endforeach()
  if(h STREQUAL "cowstore/cowstore.h")
    set(umbrella_deps ${deps})
  endif()
endforeach()
list(LENGTH headers n)
if(bad)
  message(FATAL_ERROR "public headers include dependency headers:\n${bad}")
endif()
message("${n} public headers, none includes a ck or jemalloc header")

# Each compiles alone, with the warnings a strict consumer turns on.
foreach(h ${headers})
  string(MAKE_C_IDENTIFIER ${h} id)
  execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Wpedantic -Werror
      -fsyntax-only ${flags} ${WORK}/${id}.c
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${h} does not compile alone with strict warnings:\n${out}")
  endif()
endforeach()
message("each compiles alone (-std=c11 -Wall -Wextra -Wpedantic -Werror)")

# The umbrella: every public header but testing.h.
if("cowstore/cowstore.h" IN_LIST headers)
  set(seen "")
  foreach(f ${umbrella_deps})
    if(f MATCHES "(^|/)(cowstore/[^/]+\\.h)$")
      list(APPEND seen ${CMAKE_MATCH_2})
    endif()
  endforeach()
  set(wrong "")
  foreach(h ${headers})
    if(h STREQUAL "cowstore/testing.h")
      if(h IN_LIST seen)
        string(APPEND wrong "  cowstore/cowstore.h includes cowstore/testing.h (the test hooks)\n")
      endif()
    elseif(NOT h IN_LIST seen)
      string(APPEND wrong "  cowstore/cowstore.h does not include ${h}\n")
    endif()
  endforeach()
  if(wrong)
    message(FATAL_ERROR "the umbrella header:\n${wrong}")
  endif()
  message("cowstore/cowstore.h includes every public header but cowstore/testing.h")
endif()
