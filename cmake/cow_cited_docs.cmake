# cow_cited_docs.cmake - the documents an install carries.
#
# cow_cited_docs(OUT SOURCE_DIR): every file under docs/ that a header of
# include/cowstore/ names (docs/<path>.md), and everything those documents
# link to, transitively: a relative Markdown link "[...](target)" of an
# installed .md file names a file, or a folder whose files are all taken.
# Paths are relative to SOURCE_DIR ("docs/..."), sorted. An install puts
# them into its doc directory (share/doc/cowstore/<path>), so a reader of
# the installed headers and documents finds every page they cite; the
# install tests expect them, and install.doc_links checks that every link
# resolves inside the install. A link that leaves docs/ or names nothing is
# a configure error.
function(cow_cited_docs out src)
  file(GLOB headers ${src}/include/cowstore/*.h ${src}/include/cowstore/*.h.in)
  set(todo)
  foreach(h ${headers})
    file(STRINGS ${h} lines REGEX "docs/[A-Za-z0-9_/-]+\\.md")
    foreach(l ${lines})
      string(REGEX MATCHALL "docs/[A-Za-z0-9_/-]+\\.md" found "${l}")
      foreach(d ${found})
        if(NOT EXISTS ${src}/${d})
          message(FATAL_ERROR "${h} cites ${d}, which does not exist")
        endif()
        list(APPEND todo ${d})
      endforeach()
    endforeach()
  endforeach()
  set(docs)
  while(todo)
    list(POP_FRONT todo d)
    list(FIND docs ${d} seen)
    if(NOT seen EQUAL -1)
      continue()
    endif()
    list(APPEND docs ${d})
    if(NOT d MATCHES "\\.md$")
      continue()
    endif()
    get_filename_component(dir ${d} DIRECTORY)
    file(READ ${src}/${d} text)
    # Brackets would unbalance CMake's lists: "](" becomes "<LINK>(" first.
    string(REPLACE "](" "<LINK>(" text "${text}")
    string(REGEX MATCHALL "<LINK>\\([^);]*\\)" links "${text}")
    foreach(link ${links})
      string(REGEX REPLACE "^<LINK>\\(([^)#]*).*$" "\\1" target "${link}")
      if(target STREQUAL "" OR target MATCHES "^[a-z]+:" OR target MATCHES "^/")
        continue()
      endif()
      cmake_path(SET p NORMALIZE "${dir}/${target}")
      string(REGEX REPLACE "/$" "" p "${p}")
      if(NOT p MATCHES "^docs/" OR NOT EXISTS ${src}/${p})
        message(FATAL_ERROR "${d} links to ${target}, which is not a file or "
          "folder under docs/ (${p})")
      endif()
      if(IS_DIRECTORY ${src}/${p})
        file(GLOB_RECURSE inside LIST_DIRECTORIES false RELATIVE ${src} ${src}/${p}/*)
        list(APPEND todo ${inside})
      else()
        list(APPEND todo ${p})
      endif()
    endforeach()
  endwhile()
  list(SORT docs)
  set(${out} ${docs} PARENT_SCOPE)
endfunction()
