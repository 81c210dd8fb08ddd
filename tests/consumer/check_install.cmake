# check_install.cmake - the installed package, as a consumer sees it
# (docs/install.md, "Using it from a project"). One CASE per ctest:
#   install        install the build tree into PREFIX (the fixture of the
#                  others): exactly the library, its headers and package
#                  files; the programs only with --component tools
#   find_package_shared, find_package_static, find_package_cxx
#                  a CMake consumer (tests/consumer/CMakeLists.txt) links
#                  cowstore::cowstore, cowstore::cowstore_static, or (C++)
#                  cowstore::cowstore, and changes none of the consumer's
#                  variables; run it
#   pkg_config_cmake  the same through FindPkgConfig and cowstore.pc
#   pkg_config_shared, pkg_config_static, pkg_config_fully_static
#                  cc main.c $(pkg-config ...) with cowstore.pc,
#                  cowstore-static.pc, and cowstore.pc --static plus -static;
#                  run it
#   sizes          no debug info in an optimised build's libraries (the
#                  debug build's must have it: the control)
#   pkg_config_files  what the .pc files say: no requirement, no flag but
#                  -I (no -D__x86_64__ from ck.pc), the libraries
#   control_old_package  negative control: a package that still calls
#                  pkg_check_modules(CK) must fail the variable check
#   control_linkage  negative control: the linkage checks on consumers
#                  linked the other way (shared, static) must fail
#   control_pc_requires_system_package  negative control: a cowstore.pc
#                  that requires ck cannot be satisfied with
#                  PKG_CONFIG_LIBDIR limited to the prefix (it is without
#                  the limit), and fails the flags check
# Every consumer sees only PREFIX: PKG_CONFIG_LIBDIR is its pkgconfig
# directory, so a system .pc (ck, jemalloc, criterion) cannot satisfy it by
# accident, and find_package must find the package there.
#
#   cmake -DCASE=<case> -DSOURCE_DIR=<repository> -DBINARY_DIR=<build tree>
#         -DPREFIX=<scratch prefix> -DWORK=<scratch dir of the case>
#         -DC_COMPILER=<cc> [-DCXX_COMPILER=<c++>] -DPKG_CONFIG=<pkg-config>
#         -DREADELF=<readelf> -DNM=<nm> -DVERSION=<x.y.z> -DSOVERSION=<so>
#         -DLIBDIR=<lib> -DINCLUDEDIR=<include> -DCONFIG=<build type, lower>
#         -DDEBUG_BORROWS=ON|OFF -DTOOLS=ON|OFF -P check_install.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/install_files.cmake)

set(pcdir ${PREFIX}/${LIBDIR}/pkgconfig)
set(ENV{PKG_CONFIG_LIBDIR} ${pcdir})
unset(ENV{PKG_CONFIG_PATH})
unset(ENV{PKG_CONFIG_SYSROOT_DIR})
if(NOT CASE MATCHES "^(install|check_cflags_only|check_linkage_only)$")
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  if(NOT EXISTS ${pcdir}/cowstore.pc)
    message(FATAL_ERROR "nothing installed in ${PREFIX} (the test install.prefix installs it)")
  endif()
endif()

# check_linkage(BINARY KIND): shared - needs the soname of the version
# policy; static - does not need libcowstore and defines its functions;
# fully_static - has no dynamic section at all.
function(check_linkage bin kind)
  run(dyn "readelf" ${READELF} -d ${bin})
  if(kind STREQUAL "shared")
    if(NOT dyn MATCHES "\\(NEEDED\\)[^\n]*\\[libcowstore\\.so\\.${SOVERSION}\\]")
      message(FATAL_ERROR "${bin} does not need libcowstore.so.${SOVERSION}:\n${dyn}")
    endif()
    message("needs libcowstore.so.${SOVERSION}")
    return()
  endif()
  if(dyn MATCHES "libcowstore")
    message(FATAL_ERROR "${bin} needs a shared libcowstore:\n${dyn}")
  endif()
  if(kind STREQUAL "fully_static")
    # No program interpreter and no dynamic segment (GNU and LLVM readelf
    # print the same segment types).
    run(segs "readelf" ${READELF} -l ${bin})
    if(NOT segs MATCHES "LOAD" OR segs MATCHES "INTERP|DYNAMIC")
      message(FATAL_ERROR "${bin} is not fully static:\n${segs}")
    endif()
  endif()
  run(syms "nm" ${NM} ${bin})
  if(NOT syms MATCHES "[0-9a-f]+ T cow_storage_new\n")
    message(FATAL_ERROR "${bin} does not define cow_storage_new")
  endif()
  message("libcowstore linked in (${kind})")
endfunction()

# run_consumer(BINARY): it must exit 0 and print "ok".
function(run_consumer bin)
  run(out "the consumer" ${bin})
  if(NOT out MATCHES "^ok")
    message(FATAL_ERROR "the consumer printed:\n${out}")
  endif()
  message("consumer: ${out}")
endfunction()

# cmake_consumer(LANG LINK [extra cache definitions]): configure, build.
function(cmake_consumer lang link)
  set(compiler -DCMAKE_C_COMPILER=${C_COMPILER})
  if(lang STREQUAL "CXX")
    set(compiler -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
  endif()
  run(out "consumer configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer
    -B ${WORK}/build -DCMAKE_PREFIX_PATH=${PREFIX} ${compiler}
    -DCOW_LANG=${lang} -DCOW_LINK=${link}
    -DCOW_EXPECT_DIR=${PREFIX}/${LIBDIR}/cmake/cowstore ${ARGN})
  string(REGEX MATCH "find_package\\(cowstore\\) changed no variable[^\n]*" said "${out}")
  if(said)
    message("${said}")
  endif()
  run(out "consumer build" ${CMAKE_COMMAND} --build ${WORK}/build)
endfunction()

# pkg_config(VAR args...): pkg-config's output as a list of arguments.
function(pkg_config var)
  run(out "pkg-config" ${PKG_CONFIG} ${ARGN})
  string(STRIP "${out}" out)
  separate_arguments(out UNIX_COMMAND "${out}")
  set(${var} ${out} PARENT_SCOPE)
endfunction()

# cc_consumer(EXTRA_FLAGS_VAR pkg-config args...): cc main.c $(pkg-config ...).
function(cc_consumer extra)
  pkg_config(flags ${ARGN})
  list(JOIN ARGN " " args)
  list(JOIN flags " " shown)
  message("pkg-config ${args}: ${shown}")
  run(out "cc" ${C_COMPILER} -std=c11 -Wall -Wextra -Wpedantic -Werror
    ${SOURCE_DIR}/tests/consumer/main.c ${flags} ${${extra}} -o ${WORK}/consumer)
endfunction()

# check_cflags(WHAT FLAGS...): only -I<the prefix's include directory>, and
# -DCOW_DEBUG_BORROWS=1 exactly when the library records borrows.
function(check_cflags what)
  get_filename_component(want ${PREFIX}/${INCLUDEDIR} REALPATH)
  set(seen_i OFF)
  set(seen_d OFF)
  foreach(f ${ARGN})
    if(f MATCHES "^-I(.*)$")
      get_filename_component(dir "${CMAKE_MATCH_1}" REALPATH)
      if(NOT dir STREQUAL want)
        message(FATAL_ERROR "${what}: ${f} is not the prefix's include directory ${want}")
      endif()
      set(seen_i ON)
    elseif(f STREQUAL "-DCOW_DEBUG_BORROWS=1" AND DEBUG_BORROWS)
      set(seen_d ON)
    else()
      message(FATAL_ERROR "${what}: unexpected flag ${f} in: ${ARGN}")
    endif()
  endforeach()
  if(NOT seen_i OR NOT seen_d STREQUAL DEBUG_BORROWS)
    message(FATAL_ERROR "${what}: expected -I${want}"
      " and -DCOW_DEBUG_BORROWS=1 only if DEBUG_BORROWS (${DEBUG_BORROWS}): ${ARGN}")
  endif()
endfunction()

if(CASE STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX} ${WORK})
  cow_library_install_files(want ${SOURCE_DIR} ${LIBDIR} ${INCLUDEDIR}
    ${DOCDIR} ${VERSION} ${SOVERSION} ${CONFIG})
  # A plain install: the library, headers and package files, nothing else.
  cow_install_exactly(have ${BINARY_DIR} ${PREFIX} "${want}"
    "plain install (the library, headers and package)")
  # The programs are the component "tools".
  set(tools_want "")
  if(TOOLS)
    set(tools_want bin/cow_bench bin/cow_stress)
  endif()
  cow_install_exactly(tools_have ${BINARY_DIR} ${WORK}/tools "${tools_want}"
    "--component tools" --component tools)
  message("--component tools: ${tools_have}")
  # Control: the comparison fails on an install that also holds the tools.
  if(TOOLS)
    cow_compare_files(diff "${have};${tools_have}" "${want}")
    if(NOT diff MATCHES "unexpected: bin/cow_stress")
      message(FATAL_ERROR "control: the file check missed bin/cow_stress:\n${diff}")
    endif()
    message("control: an install with the tools fails the file check")
  endif()

elseif(CASE STREQUAL "sizes")
  # docs/install.md: an optimised build installs no debug info (the
  # private jemalloc's is stripped in every build, cmake/jemalloc.cmake); a
  # debug build keeps the library's own, which is also this check's control.
  foreach(lib libcowstore.a libcowstore.so.${VERSION})
    set(f ${PREFIX}/${LIBDIR}/${lib})
    file(SIZE ${f} size)
    run(out "readelf" ${READELF} -S -W ${f})
    string(REGEX MATCHALL "\\.debug_[a-z_]+" debug "${out}")
    list(LENGTH debug ndebug)
    math(EXPR kib "${size} / 1024")
    message("${lib}: ${kib} KiB, ${ndebug} debug sections (${CONFIG})")
    set(wrong "")
    if(CONFIG MATCHES "^(release|minsizerel)$" AND ndebug GREATER 0)
      set(wrong "an optimised build's ${lib} carries debug info")
    elseif(CONFIG STREQUAL "debug" AND ndebug EQUAL 0)
      set(wrong "a debug build's ${lib} has no debug info")
    endif()
    if(wrong)
      message(FATAL_ERROR "${wrong}")
    endif()
  endforeach()

elseif(CASE STREQUAL "find_package_shared")
  cmake_consumer(C cowstore)
  check_linkage(${WORK}/build/consumer shared)
  run_consumer(${WORK}/build/consumer)

elseif(CASE STREQUAL "find_package_static")
  cmake_consumer(C cowstore_static)
  check_linkage(${WORK}/build/consumer static)
  run_consumer(${WORK}/build/consumer)

elseif(CASE STREQUAL "find_package_cxx")
  cmake_consumer(CXX cowstore)
  check_linkage(${WORK}/build/consumer shared)
  run_consumer(${WORK}/build/consumer)

elseif(CASE STREQUAL "pkg_config_cmake")
  cmake_consumer(C pkg-config)
  check_linkage(${WORK}/build/consumer shared)
  run_consumer(${WORK}/build/consumer)

elseif(CASE STREQUAL "pkg_config_shared")
  pkg_config(libdir --variable=libdir cowstore)
  set(rpath -Wl,-rpath,${libdir})
  cc_consumer(rpath --cflags --libs cowstore)
  check_linkage(${WORK}/consumer shared)
  run_consumer(${WORK}/consumer)

elseif(CASE STREQUAL "pkg_config_static")
  set(none "")
  cc_consumer(none --cflags --libs cowstore-static)
  check_linkage(${WORK}/consumer static)
  run_consumer(${WORK}/consumer)

elseif(CASE STREQUAL "pkg_config_fully_static")
  set(static -static)
  cc_consumer(static --static --cflags --libs cowstore)
  check_linkage(${WORK}/consumer fully_static)
  run_consumer(${WORK}/consumer)

elseif(CASE STREQUAL "pkg_config_files")
  get_filename_component(libdir ${PREFIX}/${LIBDIR} REALPATH)
  foreach(pc cowstore cowstore-static)
    pkg_config(v --modversion ${pc})
    if(NOT v STREQUAL VERSION)
      message(FATAL_ERROR "${pc}.pc: version '${v}', expected ${VERSION}")
    endif()
    foreach(req --print-requires --print-requires-private)
      pkg_config(r ${req} ${pc})
      if(r)
        message(FATAL_ERROR "${pc}.pc: ${req} says '${r}'; a consumer needs nothing but the library")
      endif()
    endforeach()
    pkg_config(cflags --cflags ${pc})
    check_cflags("pkg-config --cflags ${pc}" ${cflags})
    list(JOIN cflags " " cflags)
    message("pkg-config --cflags ${pc}: ${cflags}")
  endforeach()
  # The libraries, in order; directories compared by their real paths.
  foreach(row "--libs cowstore|-L${libdir} -lcowstore"
      "--static --libs cowstore|-L${libdir} -lcowstore -lpthread -lm"
      "--libs cowstore-static|${libdir}/libcowstore.a -lpthread -lm"
      "--static --libs cowstore-static|${libdir}/libcowstore.a -lpthread -lm")
    string(REPLACE "|" ";" row "${row}")
    list(GET row 0 args)
    list(GET row 1 want)
    separate_arguments(args UNIX_COMMAND "${args}")
    pkg_config(libs ${args})
    set(got "")
    foreach(f ${libs})
      if(f MATCHES "^-L(.*)$")
        get_filename_component(d "${CMAKE_MATCH_1}" REALPATH)
        set(f "-L${d}")
      elseif(f MATCHES "^/")
        get_filename_component(f "${f}" REALPATH)
      endif()
      list(APPEND got "${f}")
    endforeach()
    list(JOIN got " " got)
    list(JOIN args " " args)
    if(NOT got STREQUAL want)
      message(FATAL_ERROR "pkg-config ${args}: '${got}', expected '${want}'")
    endif()
    message("pkg-config ${args}: ${got}")
  endforeach()

elseif(CASE STREQUAL "control_old_package")
  # The old package's pkg_check_modules(CK) needs the system's ck.pc.
  unset(ENV{PKG_CONFIG_LIBDIR})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer
      -B ${WORK}/build -DCMAKE_PREFIX_PATH=${PREFIX}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCOW_CONTROL_OLD_PACKAGE=ON
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc OR NOT out MATCHES "changed the consumer's variables: [^\n]*CK_FOUND")
    message(FATAL_ERROR "control: pkg_check_modules(CK) in the package went unnoticed (exit ${rc}):\n${out}")
  endif()
  string(REGEX MATCH "changed the consumer's variables: [^\n]*" said "${out}")
  message("control: find_package(cowstore) ${said}")

elseif(CASE STREQUAL "control_pc_requires_system_package")
  # cowstore.pc as it would be if it still required ck (moved, so with
  # the prefix written out).
  file(READ ${pcdir}/cowstore.pc text)
  string(REGEX REPLACE "\nprefix=[^\n]*" "\nprefix=${PREFIX}" text "${text}")
  file(WRITE ${WORK}/pkgconfig/cowstore.pc "${text}Requires: ck >= 0.7\n")
  set(ENV{PKG_CONFIG_LIBDIR} ${WORK}/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs cowstore
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc OR NOT out MATCHES "ck")
    message(FATAL_ERROR "control: a cowstore.pc that requires ck resolved with PKG_CONFIG_LIBDIR limited (exit ${rc}):\n${out}")
  endif()
  string(STRIP "${out}" out)
  message("control: limited to the prefix, a cowstore.pc requiring ck fails: ${out}")
  # Without the limit a system ck.pc satisfies it, and its flags leak.
  unset(ENV{PKG_CONFIG_LIBDIR})
  set(ENV{PKG_CONFIG_PATH} ${WORK}/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --exists ck RESULT_VARIABLE no_ck)
  if(no_ck)
    message("(this machine has no ck.pc: no system package could satisfy it)")
  else()
    pkg_config(cflags --cflags cowstore)
    execute_process(COMMAND ${CMAKE_COMMAND} -DCASE=check_cflags_only
        -DPREFIX=${PREFIX} -DINCLUDEDIR=${INCLUDEDIR} -DLIBDIR=${LIBDIR}
        -DDEBUG_BORROWS=${DEBUG_BORROWS} "-DFLAGS=${cflags}"
        -P ${CMAKE_CURRENT_LIST_FILE}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")
    if(NOT rc OR NOT flat MATCHES "unexpected flag -D__x86_64__")
      message(FATAL_ERROR "control: the flags check accepted ${cflags} (exit ${rc}):\n${out}")
    endif()
    list(JOIN cflags " " cflags)
    message("control: with the system's ck.pc it resolves, and the flags check rejects: ${cflags}")
  endif()

elseif(CASE STREQUAL "control_linkage")
  # The linkage check on consumers linked the other way must fail.
  pkg_config(libdir --variable=libdir cowstore)
  set(rpath -Wl,-rpath,${libdir})
  cc_consumer(rpath --cflags --libs cowstore)
  file(RENAME ${WORK}/consumer ${WORK}/shared)
  set(none "")
  cc_consumer(none --cflags --libs cowstore-static)
  file(RENAME ${WORK}/consumer ${WORK}/static)
  foreach(row "shared|static|needs a shared libcowstore"
      "static|shared|does not need libcowstore.so"
      "static|fully_static|is not fully static")
    string(REPLACE "|" ";" row "${row}")
    list(GET row 0 bin)
    list(GET row 1 kind)
    list(GET row 2 want)
    execute_process(COMMAND ${CMAKE_COMMAND} -DCASE=check_linkage_only
        -DBIN=${WORK}/${bin} -DKIND=${kind} -DREADELF=${READELF} -DNM=${NM}
        -DSOVERSION=${SOVERSION} -P ${CMAKE_CURRENT_LIST_FILE}
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    # (CMake wraps the message's lines.)
    string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")
    if(NOT rc OR NOT flat MATCHES "${want}")
      message(FATAL_ERROR "control: the ${kind} check passed a ${bin} consumer (exit ${rc}):\n${out}")
    endif()
    message("control: the ${kind} check rejects a ${bin} consumer: ${want}")
  endforeach()

elseif(CASE STREQUAL "check_linkage_only")
  # (For the control above: the linkage check, in a process of its own.)
  check_linkage(${BIN} ${KIND})

elseif(CASE STREQUAL "check_cflags_only")
  # (For the control above: the flags check on FLAGS, in a process of its own.)
  check_cflags("pkg-config --cflags cowstore" ${FLAGS})

else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()
