# check_library_only.cmake - the library-only build of docs/install.md ("Using it
# from a project"), run as a user would, into a scratch directory:
#   cmake -S . -B B -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
#         -DCOW_WITH_JEMALLOC=OFF && cmake --build B && cmake --install B --prefix P
# (without jemalloc, to stay fast), with pkg-config disabled
# (CMAKE_DISABLE_FIND_PACKAGE_PkgConfig) and the caller's CC and CFLAGS
# unset. It checks that
#  - configure looks for none of the test tools (Criterion, pkg-config,
#    valgrind, python3, bash, spin, a C++ compiler),
#  - every object compiled is one of the library's sources (alloc/*.c,
#    runtime/*/*.c), each at most twice (shared and static), none of the
#    tools, tests or library variants, and no executable is linked,
#  - no compile command has -Werror,
#  - the install holds exactly the library, its headers and package files,
#    and --component tools installs nothing.
# The negative control runs the same object check on CONTROL_BUILD (the
# preset's own build tree, with its tools, tests and library variants),
# which must fail.
#   cmake -DSOURCE_DIR=<repository> -DWORK=<scratch dir> -DVERSION=<x.y.z>
#         -DSOVERSION=<so> -DCONTROL_BUILD=<a full build tree>
#         -P check_library_only.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/install_files.cmake)

set(build ${WORK}/build)
set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
foreach(v CC CFLAGS CPPFLAGS LDFLAGS)
  unset(ENV{${v}})
endforeach()

# check_objects(RESULT BUILD_TREE): RESULT is empty when every object under
# BUILD_TREE/**/CMakeFiles/<target>.dir/ is one of the library's sources,
# each compiled at most twice, else one line per problem. (The private
# jemalloc's objects, unpacked from its archive, are not compiled here.)
function(check_objects result tree)
  file(GLOB lib_sources RELATIVE ${SOURCE_DIR}
    ${SOURCE_DIR}/alloc/*.c ${SOURCE_DIR}/runtime/*/*.c)
  file(GLOB_RECURSE objects LIST_DIRECTORIES false ${tree}/*.o)
  set(msg "")
  set(count 0)
  foreach(o ${objects})
    if(NOT o MATCHES "/CMakeFiles/([^/]+)\\.dir/(.+)\\.o$")
      continue()
    endif()
    set(target ${CMAKE_MATCH_1})
    # A source outside the target's directory: CMakeFiles/T.dir/__/alloc/x.c.o
    string(REGEX REPLACE "^(__/)+" "" src "${CMAKE_MATCH_2}")
    math(EXPR count "${count} + 1")
    if(src IN_LIST lib_sources)
      string(MAKE_C_IDENTIFIER "${src}" id)
      if(NOT DEFINED n_${id})
        set(n_${id} 0)
      endif()
      math(EXPR n_${id} "${n_${id}} + 1")
      if(n_${id} EQUAL 3)
        string(APPEND msg "  ${src} compiled more than twice (a library variant: ${target})\n")
      endif()
    else()
      string(APPEND msg "  ${target}: ${src} is not a library source\n")
    endif()
  endforeach()
  foreach(src ${lib_sources})
    string(MAKE_C_IDENTIFIER "${src}" id)
    if(NOT n_${id})
      string(APPEND msg "  ${src} was not compiled\n")
    endif()
  endforeach()
  set(${result} "${msg}" PARENT_SCOPE)
  set(${result}_count ${count} PARENT_SCOPE)
endfunction()

string(TIMESTAMP t0 "%s")
run(out "configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build}
  -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DCOW_WITH_JEMALLOC=OFF
  -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
file(STRINGS ${build}/CMakeCache.txt looked_for
  REGEX "^[^/#]*(CRITERION|PKG_CONFIG|VALGRIND|PYTHON|Python|COW_BASH|SPIN|CMAKE_CXX_COMPILER)[^:]*:")
# The option that turns the Python module on is not a look-up (it is OFF).
list(FILTER looked_for EXCLUDE REGEX "^COW_PYTHON:BOOL=OFF$")
if(looked_for)
  message(FATAL_ERROR "the library-only configure looked for test tools:\n${looked_for}")
endif()
file(STRINGS ${build}/CMakeCache.txt tools REGEX "^COW_BUILD_TOOLS:BOOL=")
if(NOT tools STREQUAL "COW_BUILD_TOOLS:BOOL=OFF")
  message(FATAL_ERROR "BUILD_TESTING=OFF left ${tools}")
endif()

run(out "build" ${CMAKE_COMMAND} --build ${build} -j2)
string(TIMESTAMP t1 "%s")
if(out MATCHES "Linking C executable ([^\n]*)")
  message(FATAL_ERROR "the library-only build linked a program: ${CMAKE_MATCH_1}")
endif()
check_objects(bad ${build})
if(bad)
  message(FATAL_ERROR "the library-only build compiled more than the library:\n${bad}")
endif()
file(GLOB lib_sources ${SOURCE_DIR}/alloc/*.c ${SOURCE_DIR}/runtime/*/*.c)
list(LENGTH lib_sources nsrc)
math(EXPR secs "${t1} - ${t0}")
message("library-only build: ${bad_count} objects from the ${nsrc} library sources, "
  "configure and build in ${secs} s")

file(READ ${build}/compile_commands.json commands)
if(commands MATCHES "-Werror")
  message(FATAL_ERROR "the library-only build compiles with -Werror")
endif()

cow_library_install_files(want ${SOURCE_DIR} lib include share/doc/cowstore
  ${VERSION} ${SOVERSION} release)
cow_install_exactly(have ${build} ${prefix} "${want}" "the library-only install")
cow_install_exactly(have ${build} ${WORK}/tools "" "--component tools (no tools built)"
  --component tools)

# Control: a full build tree fails the object check.
check_objects(bad ${CONTROL_BUILD})
if(NOT bad MATCHES "is not a library source" OR NOT bad MATCHES "compiled more than twice")
  message(FATAL_ERROR "control: the object check passed ${CONTROL_BUILD}:\n${bad}")
endif()
message("control: the object check rejects ${CONTROL_BUILD} (${bad_count} objects)")
