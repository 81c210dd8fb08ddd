# cow_cited_docs.cmake - the documents the public headers cite.
#
# cow_cited_docs(OUT SOURCE_DIR): every docs/<path>.md that a header of
# include/cowstore/ names, relative to SOURCE_DIR, sorted. An install puts
# them into its doc directory (share/doc/cowstore/<path>.md), so a reader of
# the installed headers finds what they cite; the install tests expect them.
function(cow_cited_docs out src)
  file(GLOB headers ${src}/include/cowstore/*.h ${src}/include/cowstore/*.h.in)
  set(docs)
  foreach(h ${headers})
    file(STRINGS ${h} lines REGEX "docs/[A-Za-z0-9_/-]+\\.md")
    foreach(l ${lines})
      string(REGEX MATCHALL "docs/[A-Za-z0-9_/-]+\\.md" found "${l}")
      list(APPEND docs ${found})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES docs)
  list(SORT docs)
  foreach(d ${docs})
    if(NOT EXISTS ${src}/${d})
      message(FATAL_ERROR "a public header cites ${d}, which does not exist")
    endif()
  endforeach()
  set(${out} ${docs} PARENT_SCOPE)
endfunction()
