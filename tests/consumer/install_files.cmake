# install_files.cmake - what an install of cowstore holds, for
# check_install.cmake and check_library_only.cmake (include() it).

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
