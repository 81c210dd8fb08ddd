# install_files.cmake - what an install of cowstore holds, and running the
# commands that make one, for check_install.cmake, check_library_only.cmake
# and check_tsan.cmake (include() it).

# run(VAR what command...): run a command, fail with its output if it
# fails; VAR gets its output.
function(run var what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  if(rc)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "${what} failed (${rc}): ${cmd}\n${out}")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/cow_cited_docs.cmake)

# cow_library_install_files(OUT SOURCE_DIR LIBDIR INCLUDEDIR DOCDIR VERSION
#                           SOVERSION CONFIG): the files a plain install
# puts into its prefix, relative to it and sorted: the shared library and
# its soname links, the static library, the public headers of the source
# tree plus the generated version.h, the documents they cite (in DOCDIR),
# the CMake package (its targets file per configuration CONFIG, e.g.
# "release") and the two pkg-config files.
function(cow_library_install_files out src libdir incdir docdir version soversion config)
  file(GLOB headers RELATIVE ${src}/include ${src}/include/cowstore/*.h)
  set(files ${headers} cowstore/version.h)
  list(TRANSFORM files PREPEND "${incdir}/")
  cow_cited_docs(docs ${src})
  foreach(d ${docs})
    string(REGEX REPLACE "^docs/" "${docdir}/" d ${d})
    list(APPEND files ${d})
  endforeach()
  foreach(f libcowstore.so libcowstore.so.${soversion} libcowstore.so.${version}
      libcowstore.a cmake/cowstore/cowstoreConfig.cmake
      cmake/cowstore/cowstoreConfigVersion.cmake cmake/cowstore/cowstoreTargets.cmake
      cmake/cowstore/cowstoreTargets-${config}.cmake pkgconfig/cowstore.pc
      pkgconfig/cowstore-static.pc)
    list(APPEND files ${libdir}/${f})
  endforeach()
  list(REMOVE_DUPLICATES files)
  list(SORT files)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# cow_installed_files(OUT PREFIX): every file (and symbolic link) under
# PREFIX, relative to it, sorted.
function(cow_installed_files out prefix)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE ${prefix} ${prefix}/*)
  list(SORT files)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# cow_compare_files(RESULT ACTUAL EXPECTED): RESULT is empty when the two
# lists are equal, else one line per extra and per missing file.
function(cow_compare_files result actual expected)
  set(extra ${actual})
  set(missing ${expected})
  if(expected)
    list(REMOVE_ITEM extra ${expected})
  endif()
  if(actual)
    list(REMOVE_ITEM missing ${actual})
  endif()
  set(msg "")
  foreach(f ${extra})
    string(APPEND msg "  unexpected: ${f}\n")
  endforeach()
  foreach(f ${missing})
    string(APPEND msg "  missing: ${f}\n")
  endforeach()
  set(${result} "${msg}" PARENT_SCOPE)
endfunction()

# cow_install_exactly(OUT BUILD PREFIX EXPECTED WHAT [ARGS...]): cmake
# --install the build tree BUILD into PREFIX (with ARGS, e.g. --component
# tools), which must then hold exactly the files of the list EXPECTED
# (else fail, calling the install WHAT); OUT gets them.
function(cow_install_exactly out build prefix expected what)
  run(log "${what}" ${CMAKE_COMMAND} --install ${build} --prefix ${prefix} ${ARGN})
  cow_installed_files(have ${prefix})
  cow_compare_files(diff "${have}" "${expected}")
  if(diff)
    message(FATAL_ERROR "${what} holds other files than expected:\n${diff}")
  endif()
  list(LENGTH have n)
  message("${what}: exactly the ${n} files expected")
  set(${out} ${have} PARENT_SCOPE)
endfunction()
