# check_tsan.cmake - the ThreadSanitizer variant as an engine uses it
# (docs/tsan.md). One CASE per
# ctest (TSan builds with clang only; tests/CMakeLists.txt):
#   prefix   install the build tree (a -DCOW_SANITIZE=thread build) into
#            WORK/prefix (the fixture of the others): exactly the files of
#            a plain install, under the same names, the libraries
#            instrumented (they call __tsan_*). Then WORK/plain-prefix: the
#            same install with libcowstore.so and .a replaced by
#            PLAIN_SHARED and PLAIN_STATIC, the same sources compiled
#            without -fsanitize=thread, which must call no __tsan_*
#            function (so the annotations of core/atomic.h and its
#            siblings are gone, as in a plain install)
#   consumer  build tests/consumer/tsan (engine.c, -fsanitize=thread,
#            find_package(cowstore), cowstore::cowstore) against
#            WORK/prefix and run it: it must print "ok" and exit 0, and
#            TSan must report nothing
#   control_plain  negative control: the same engine against
#            WORK/plain-prefix must still print "ok" (its snapshots hold
#            the right values), and TSan must report a data race: it
#            cannot see an uninstrumented library's synchronisation
#   control_engine_race  negative control: the engine built with a real
#            race (-DENGINE_STALE_WRITE=ON) against WORK/prefix: TSan must
#            report a data race in it (the instrumented library hides
#            nothing the engine does wrong)
#
#   cmake -DCASE=<case> -DSOURCE_DIR=<repository> -DBINARY_DIR=<build tree>
#         -DWORK=<scratch dir> -DC_COMPILER=<clang> -DNM=<nm>
#         -DVERSION=<x.y.z> -DSOVERSION=<so> -DLIBDIR=<lib> -DDOCDIR=<doc>
#         -DINCLUDEDIR=<include> -DCONFIG=<build type, lower>
#         -DPLAIN_SHARED=<libcowstore.so.x.y.z> -DPLAIN_STATIC=<libcowstore.a>
#         -P check_tsan.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/install_files.cmake)

set(prefix ${WORK}/prefix)
set(plain_prefix ${WORK}/plain-prefix)

# tsan_calls(VAR LIBRARY): the __tsan_* functions LIBRARY calls, sorted.
function(tsan_calls var lib)
  run(syms "nm" ${NM} --undefined-only ${lib})
  string(REGEX MATCHALL "U __tsan_[a-z_0-9]+" calls "${syms}")
  list(TRANSFORM calls REPLACE "^U " "")
  list(REMOVE_DUPLICATES calls)
  list(SORT calls)
  set(${var} "${calls}" PARENT_SCOPE)
endfunction()

# engine(VAR PREFIX DIR [cache definitions]): build the engine against
# PREFIX in DIR, run it; VAR gets its output, VAR_rc its exit status.
function(engine var pfx dir)
  file(REMOVE_RECURSE ${dir})
  run(out "engine configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/tsan
    -B ${dir} -DCMAKE_PREFIX_PATH=${pfx} -DCMAKE_C_COMPILER=${C_COMPILER}
    -DCMAKE_BUILD_TYPE=RelWithDebInfo ${ARGN})
  run(out "engine build" ${CMAKE_COMMAND} --build ${dir})
  # The library it loads is the prefix's.
  run(out "ldd" ldd ${dir}/engine)
  get_filename_component(want ${pfx}/${LIBDIR}/libcowstore.so.${SOVERSION} REALPATH)
  if(NOT out MATCHES "libcowstore\\.so\\.${SOVERSION} => ([^ \n]+)")
    message(FATAL_ERROR "the engine does not load libcowstore.so.${SOVERSION}:\n${out}")
  endif()
  get_filename_component(have ${CMAKE_MATCH_1} REALPATH)
  if(NOT have STREQUAL want)
    message(FATAL_ERROR "the engine loads ${have}, not ${want}")
  endif()
  # Every report, and the engine runs to its end (the preset's TSAN_OPTIONS
  # stop at the first one).
  set(ENV{TSAN_OPTIONS} "halt_on_error=0")
  execute_process(COMMAND ${dir}/engine RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("engine against ${pfx} (exit ${rc}):")
  string(REGEX MATCHALL "WARNING: ThreadSanitizer: [^\n(]*" reports "${out}")
  list(LENGTH reports n)
  message("  ${n} TSan reports")
  string(REGEX MATCH "ok: [^\n]*" ok "${out}")
  message("  engine: ${ok}")
  set(${var} "${out}" PARENT_SCOPE)
  set(${var}_rc ${rc} PARENT_SCOPE)
endfunction()

if(CASE STREQUAL "prefix")
  file(REMOVE_RECURSE ${WORK})
  cow_library_install_files(want ${SOURCE_DIR} ${LIBDIR} ${INCLUDEDIR}
    ${DOCDIR} ${VERSION} ${SOVERSION} ${CONFIG})
  cow_install_exactly(have ${BINARY_DIR} ${prefix} "${want}" "TSan install")
  set(shared ${LIBDIR}/libcowstore.so.${VERSION})
  set(static ${LIBDIR}/libcowstore.a)
  foreach(lib ${shared} ${static})
    tsan_calls(calls ${prefix}/${lib})
    if(NOT "__tsan_acquire" IN_LIST calls OR NOT "__tsan_release" IN_LIST calls)
      message(FATAL_ERROR "${prefix}/${lib} is not instrumented with core/atomic.h's annotations: ${calls}")
    endif()
    list(LENGTH calls n)
    message("${lib}: calls ${n} __tsan_* functions")
  endforeach()
  # The control's prefix: the same files, uninstrumented libraries.
  file(COPY ${prefix}/ DESTINATION ${plain_prefix})
  file(COPY_FILE ${PLAIN_SHARED} ${plain_prefix}/${shared})
  file(COPY_FILE ${PLAIN_STATIC} ${plain_prefix}/${static})
  foreach(lib ${shared} ${static})
    tsan_calls(calls ${plain_prefix}/${lib})
    if(calls)
      message(FATAL_ERROR "${plain_prefix}/${lib}: the plain library calls ${calls}")
    endif()
  endforeach()
  message("plain prefix (the control's): the libraries call no __tsan_* function")

elseif(CASE STREQUAL "consumer")
  engine(out ${prefix} ${WORK}/consumer)
  if(out MATCHES "WARNING: ThreadSanitizer" OR out_rc OR NOT out MATCHES "(^|\n)ok: ")
    message(FATAL_ERROR "the engine against the TSan install (exit ${out_rc}):\n${out}")
  endif()
  message("TSan install: no report")

elseif(CASE STREQUAL "control_plain")
  engine(out ${plain_prefix} ${WORK}/control)
  if(NOT out MATCHES "(^|\n)ok: ")
    message(FATAL_ERROR "control: the engine failed against the plain library (exit ${out_rc}):\n${out}")
  endif()
  # As the engine author saw it: the engine's writes reported against the
  # memcpy of a materialisation inside the library.
  string(REGEX MATCHALL "by main thread:\n *#0 main [^\n]*\n\n *Previous read of size [0-9]+ at [^\n]*\n *#0 memcpy [^\n]*\n *#1 [^ ]+ [^\n]*\\(libcowstore\\.so"
    copies "${out}")
  list(LENGTH copies n)
  if(NOT out MATCHES "WARNING: ThreadSanitizer: data race" OR NOT out_rc EQUAL 66
     OR n EQUAL 0)
    message(FATAL_ERROR "control: no data race against the library's memcpy reported with the plain library (exit ${out_rc}):\n${out}")
  endif()
  string(REGEX MATCH "#1 [^ ]+" in "${copies}")
  message("control: TSan cannot see the plain library's synchronisation:"
    " ${n} of the reports are the engine's writes against its memcpy (${in})")

elseif(CASE STREQUAL "control_engine_race")
  engine(out ${prefix} ${WORK}/engine-race -DENGINE_STALE_WRITE=ON)
  if(NOT out MATCHES "WARNING: ThreadSanitizer: data race" OR
     NOT out MATCHES "#0 stale_write [^\n]*engine\.c")
    message(FATAL_ERROR "control: the engine's own race went unreported against the TSan install (exit ${out_rc}):\n${out}")
  endif()
  message("control: the engine's stale write is reported against the TSan install")

else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()
