# jemalloc.cmake - the library's private jemalloc.
#
# Debian's jemalloc is unprefixed (linking it replaces the host's malloc) and
# uses initial-exec TLS (a library that needs it cannot be dlopen'ed). So
# cowstore builds its own copy from Debian's source tarball: every symbol
# prefixed cow__je_, global-dynamic TLS, no C++, static and PIC. The result
# is linked into libcowstore.so (with its symbols hidden) and merged into
# libcowstore.a, so a consumer needs nothing but -lpthread and -lm.
#
# The tarball comes from COW_JEMALLOC_SOURCE, or else from the cache that
# scripts/deps.sh fills (${XDG_CACHE_HOME:-$HOME/.cache}/cowstore); its
# SHA-256 must match cmake/jemalloc.sha256. The build (about a CPU-minute)
# is kept in the same cache, keyed by what changes it: that SHA-256, the
# configure flags and the compiler's identity (its id, version and target),
# not its path, so presets and work trees on one machine share it, and
# `cc` and `/usr/bin/gcc` (one gcc) share one build.
#
# Sets COW_JEMALLOC_LIBRARY (the _pic.a), COW_JEMALLOC_INCLUDE_DIR (holds
# cow_jemalloc.h) and COW_JEMALLOC_OBJECTS (the archive's objects, for the
# static library). cow_link_jemalloc(target type) links a library with it.

set(COW_JEMALLOC_SOURCE "" CACHE FILEPATH
  "jemalloc source tarball (default: the cache that scripts/deps.sh fills)")
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_cow_je_default_cache "$ENV{XDG_CACHE_HOME}/cowstore")
elseif(DEFINED ENV{HOME} AND NOT "$ENV{HOME}" STREQUAL "")
  set(_cow_je_default_cache "$ENV{HOME}/.cache/cowstore")
else()
  set(_cow_je_default_cache "${PROJECT_BINARY_DIR}/cowstore-cache")
endif()
set(COW_JEMALLOC_CACHE "${_cow_je_default_cache}" CACHE PATH
  "Where the jemalloc tarball and its private builds are kept")

file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/jemalloc.sha256 _cow_je_pin LIMIT_COUNT 1)
if(NOT _cow_je_pin MATCHES "^([0-9a-f]+) +([^ ]+)$")
  message(FATAL_ERROR "cmake/jemalloc.sha256: expected '<sha256>  <file>'")
endif()
set(_cow_je_sha ${CMAKE_MATCH_1})
set(_cow_je_file ${CMAKE_MATCH_2})

set(_cow_je_src "${COW_JEMALLOC_SOURCE}")
if(_cow_je_src STREQUAL "")
  set(_cow_je_src "${COW_JEMALLOC_CACHE}/${_cow_je_file}")
endif()
if(NOT EXISTS "${_cow_je_src}")
  message(FATAL_ERROR "cowstore: no jemalloc source at ${_cow_je_src}. "
    "Either fetch it (scripts/deps.sh puts Debian's ${_cow_je_file} there) "
    "or pass -DCOW_JEMALLOC_SOURCE=/path/to/${_cow_je_file}, "
    "or build without jemalloc: -DCOW_WITH_JEMALLOC=OFF.")
endif()
file(SHA256 "${_cow_je_src}" _cow_je_actual)
if(NOT _cow_je_actual STREQUAL _cow_je_sha)
  message(FATAL_ERROR "cowstore: ${_cow_je_src} has SHA-256 ${_cow_je_actual}, "
    "not ${_cow_je_sha} (cmake/jemalloc.sha256)")
endif()

# je_cv_pthread_atfork=no: jemalloc registers no fork handlers of its own;
# the library runs them, after its own locks (alloc/jemalloc.c, core/fork.h).
set(_cow_je_flags
  --with-jemalloc-prefix=cow__je_ --with-private-namespace=cow__je_
  --disable-initial-exec-tls --disable-cxx --disable-shared --enable-static
  --with-pic je_cv_pthread_atfork=no)
# A cross build (the arm64 preset, cmake/aarch64-linux-gnu.cmake): configure
# cannot run its probes for the target, so it gets the target's triple
# (COW_CROSS_HOST, from the toolchain file) and, for arm64, the page size
# Debian's arm64 jemalloc is built with: 64 KiB (2^16), so that it runs on
# kernels with 4, 16 or 64 KiB pages.
if(CMAKE_CROSSCOMPILING)
  if(NOT COW_CROSS_HOST)
    message(FATAL_ERROR "cowstore: cross-compiling jemalloc needs the target's "
      "GNU triple in COW_CROSS_HOST (set it in the toolchain file)")
  endif()
  list(APPEND _cow_je_flags --host=${COW_CROSS_HOST})
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    list(APPEND _cow_je_flags --with-lg-page=16)
  endif()
endif()
# The compiler's target: what it was configured for (-dumpmachine), which
# tells a cross gcc from the host's gcc of the same version.
execute_process(COMMAND ${CMAKE_C_COMPILER} -dumpmachine
  OUTPUT_VARIABLE _cow_je_target OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _rc ERROR_QUIET)
if(_rc)
  set(_cow_je_target "${CMAKE_C_COMPILER}")
endif()
string(SHA256 _cow_je_key
  "${_cow_je_sha};${_cow_je_flags};${CMAKE_C_COMPILER_ID};${CMAKE_C_COMPILER_VERSION};${_cow_je_target}")
string(SUBSTRING ${_cow_je_key} 0 16 _cow_je_key)
set(_cow_je_dir "${COW_JEMALLOC_CACHE}/jemalloc-${_cow_je_key}")
set(COW_JEMALLOC_LIBRARY "${_cow_je_dir}/lib/libjemalloc_pic.a")
set(COW_JEMALLOC_INCLUDE_DIR "${_cow_je_dir}/include")

if(NOT EXISTS "${_cow_je_dir}/done")
  file(MAKE_DIRECTORY "${COW_JEMALLOC_CACHE}")
  # One build per key, whoever configures first; the others wait here.
  file(LOCK "${_cow_je_dir}.lock" GUARD FILE TIMEOUT 1800 RESULT_VARIABLE _cow_je_lock)
  if(_cow_je_lock)
    message(FATAL_ERROR "cowstore: could not lock ${_cow_je_dir}.lock: ${_cow_je_lock}")
  endif()
  if(NOT EXISTS "${_cow_je_dir}/done")
    set(_cow_je_work "${_cow_je_dir}.work")
    set(_cow_je_log "${_cow_je_dir}.log")
    string(TIMESTAMP _cow_je_start "%s")
    message(STATUS "cowstore: building the private jemalloc "
      "(${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}, ${_cow_je_target}) "
      "once for every build with this compiler; about a CPU-minute")
    message(STATUS "cowstore: jemalloc cache: ${_cow_je_dir}; log: ${_cow_je_log}")
    message(STATUS "cowstore: jemalloc 1/3: unpacking and configuring")
    file(REMOVE_RECURSE "${_cow_je_work}" "${_cow_je_dir}")
    file(MAKE_DIRECTORY "${_cow_je_work}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf "${_cow_je_src}"
      WORKING_DIRECTORY "${_cow_je_work}" RESULT_VARIABLE _rc)
    file(GLOB _cow_je_tree LIST_DIRECTORIES true "${_cow_je_work}/jemalloc-*")
    if(_rc OR NOT EXISTS "${_cow_je_tree}/configure")
      message(FATAL_ERROR "cowstore: could not unpack ${_cow_je_src}")
    endif()
    cmake_host_system_information(RESULT _cow_je_jobs QUERY NUMBER_OF_LOGICAL_CORES)
    if(_cow_je_jobs GREATER 2)
      set(_cow_je_jobs 2)
    endif()
    # The caller's CFLAGS and the like must not leak into it (sanitizers).
    set(_cow_je_env ${CMAKE_COMMAND} -E env --unset=CFLAGS --unset=CPPFLAGS
      --unset=LDFLAGS --unset=EXTRA_CFLAGS --unset=MAKEFLAGS)
    execute_process(COMMAND ${_cow_je_env} ./configure CC=${CMAKE_C_COMPILER}
        ${_cow_je_flags}
      WORKING_DIRECTORY "${_cow_je_tree}" RESULT_VARIABLE _rc
      OUTPUT_FILE "${_cow_je_log}" ERROR_FILE "${_cow_je_log}")
    if(NOT _rc)
      message(STATUS "cowstore: jemalloc 2/3: compiling (make -j${_cow_je_jobs})")
      # Only the PIC archive (build_lib_static would compile every source a
      # second time for the non-PIC one, which nothing here uses).
      execute_process(COMMAND ${_cow_je_env} make -j${_cow_je_jobs} lib/libjemalloc_pic.a
        WORKING_DIRECTORY "${_cow_je_tree}" RESULT_VARIABLE _rc
        OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
      file(APPEND "${_cow_je_log}" "${_out}")
    endif()
    if(_rc OR NOT EXISTS "${_cow_je_tree}/lib/libjemalloc_pic.a")
      message(FATAL_ERROR "cowstore: building jemalloc failed; see ${_cow_je_log}")
    endif()
    file(MAKE_DIRECTORY "${_cow_je_work}/out/lib" "${_cow_je_work}/out/include")
    file(COPY "${_cow_je_tree}/lib/libjemalloc_pic.a" DESTINATION "${_cow_je_work}/out/lib")
    file(COPY_FILE "${_cow_je_tree}/include/jemalloc/jemalloc.h"
      "${_cow_je_work}/out/include/cow_jemalloc.h")
    file(COPY "${_cow_je_tree}/COPYING" DESTINATION "${_cow_je_work}/out")
    file(TOUCH "${_cow_je_work}/out/done")
    file(RENAME "${_cow_je_work}/out" "${_cow_je_dir}")
    file(REMOVE_RECURSE "${_cow_je_work}")
    string(TIMESTAMP _cow_je_end "%s")
    math(EXPR _cow_je_secs "${_cow_je_end} - ${_cow_je_start}")
    message(STATUS "cowstore: jemalloc 3/3: built in ${_cow_je_secs} s")
  endif()
  file(LOCK "${_cow_je_dir}.lock" RELEASE)
else()
  message(STATUS "cowstore: private jemalloc (${CMAKE_C_COMPILER_ID} "
    "${CMAKE_C_COMPILER_VERSION}, ${_cow_je_target}) from the cache: ${_cow_je_dir}")
endif()

# The archive's objects, unpacked into the build tree for the static library
# and stripped of their debug info, and an archive of them for the shared
# library. jemalloc builds with -g3: 40 MB of the 46 MB a Debug libcowstore.a
# weighed with it, copied into every static variant of the library and every
# program linked with one (a dev build tree: 2.0 GB with it, 0.5 GB without;
# docs/install.md). Symbols stay, so a backtrace still names jemalloc's
# functions.
set(_cow_je_objdir "${PROJECT_BINARY_DIR}/jemalloc-objects")
set(_cow_je_stamp "${_cow_je_objdir}/${_cow_je_key}-stripped")
if(NOT EXISTS "${_cow_je_stamp}")
  file(REMOVE_RECURSE "${_cow_je_objdir}")
  file(MAKE_DIRECTORY "${_cow_je_objdir}/lib")
  execute_process(COMMAND ${CMAKE_AR} x "${COW_JEMALLOC_LIBRARY}"
    WORKING_DIRECTORY "${_cow_je_objdir}" RESULT_VARIABLE _rc)
  if(_rc)
    message(FATAL_ERROR "cowstore: ${CMAKE_AR} x ${COW_JEMALLOC_LIBRARY} failed")
  endif()
  file(GLOB _cow_je_objs RELATIVE "${_cow_je_objdir}" "${_cow_je_objdir}/*.o")
  execute_process(COMMAND ${CMAKE_STRIP} --strip-debug ${_cow_je_objs}
    WORKING_DIRECTORY "${_cow_je_objdir}" RESULT_VARIABLE _rc)
  if(NOT _rc)
    execute_process(COMMAND ${CMAKE_AR} qcs lib/libjemalloc_pic.a ${_cow_je_objs}
      WORKING_DIRECTORY "${_cow_je_objdir}" RESULT_VARIABLE _rc)
  endif()
  if(_rc)
    message(FATAL_ERROR "cowstore: stripping jemalloc's objects failed")
  endif()
  file(TOUCH "${_cow_je_stamp}")
endif()
file(GLOB COW_JEMALLOC_OBJECTS "${_cow_je_objdir}/*.o")
set(COW_JEMALLOC_LIBRARY "${_cow_je_objdir}/lib/libjemalloc_pic.a")

# cow_link_jemalloc(TARGET TYPE): the shared library links the archive with
# its symbols hidden (--exclude-libs); a static library carries the
# archive's objects.
function(cow_link_jemalloc name type)
  target_include_directories(${name} PRIVATE ${COW_JEMALLOC_INCLUDE_DIR})
  target_compile_definitions(${name} PRIVATE COW_HAVE_JEMALLOC=1)
  if(type STREQUAL "SHARED")
    target_link_libraries(${name} PRIVATE ${COW_JEMALLOC_LIBRARY})
    target_link_options(${name} PRIVATE "LINKER:--exclude-libs,libjemalloc_pic.a")
  elseif(type STREQUAL "STATIC")
    target_sources(${name} PRIVATE ${COW_JEMALLOC_OBJECTS})
  endif()
  # (An OBJECT library only compiles: its shared and static users link.)
endfunction()
