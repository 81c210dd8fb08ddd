# check_includes.cmake - the #include "folder/..." edges between the
# library's folders follow its layers (docs/design.md, "Layers"):
#
#   cmake -DROOT=<source tree> -P check_includes.cmake
#
# Reads every .c and .h file in ROOT/alloc and ROOT/runtime/<folder>, and
# every quoted include of the form "folder/file". An include of a folder
# that the table below does not allow from the including file's folder is
# an error, as is a source folder the table does not know. Prints each
# offending include as "<file>:<line>: <folder> includes <target>" and
# fails; otherwise prints the number of includes checked.
cmake_minimum_required(VERSION 3.25)

# The table: each folder and the folders its files may include. A layer
# includes itself and the layers below it, never one above.
set(allowed_core       core)
set(allowed_alloc      alloc core)
set(allowed_storage    storage alloc core)
set(allowed_tensor     tensor storage alloc core)
set(allowed_functional functional tensor storage alloc core)
set(allowed_interop    interop tensor storage alloc core)
set(allowed_snapshot   snapshot tensor storage alloc core)
set(allowed_files      files snapshot tensor storage alloc core)
set(folders core alloc storage tensor functional interop snapshot files)

if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_includes.cmake")
endif()

file(GLOB_RECURSE sources LIST_DIRECTORIES false
  ${ROOT}/alloc/*.c ${ROOT}/alloc/*.h ${ROOT}/runtime/*.c ${ROOT}/runtime/*.h)
set(bad 0)
set(checked 0)
foreach(file ${sources})
  file(RELATIVE_PATH rel ${ROOT} ${file})
  if(rel MATCHES "^alloc/")
    set(from alloc)
  elseif(rel MATCHES "^runtime/([^/]+)/")
    set(from ${CMAKE_MATCH_1})
  else()
    message(SEND_ERROR "${rel}: not in a folder of the table")
    math(EXPR bad "${bad} + 1")
    continue()
  endif()
  if(NOT from IN_LIST folders)
    message(SEND_ERROR "${rel}: folder ${from} is not in the table")
    math(EXPR bad "${bad} + 1")
    continue()
  endif()
  file(STRINGS ${file} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^/\"]+)/")
      set(to ${CMAKE_MATCH_1})
      math(EXPR checked "${checked} + 1")
      if(NOT to IN_LIST allowed_${from})
        message(SEND_ERROR "${rel}:${n}: ${from} includes ${to}")
        math(EXPR bad "${bad} + 1")
      endif()
    endif()
  endforeach()
endforeach()
if(bad GREATER 0)
  message(FATAL_ERROR "check_includes: ${bad} include(s) against the layers")
endif()
list(LENGTH sources nfiles)
message(STATUS "check_includes: ${checked} includes in ${nfiles} files follow the layers")
