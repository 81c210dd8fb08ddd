# check_includes.cmake - the #include "folder/..." edges between the
# library's folders follow its layers (docs/design.md, "Layers"), and only
# runtime/core/ includes ConcurrencyKit:
#
#   cmake -DROOT=<source tree> -P check_includes.cmake
#
# Reads every .c and .h file in ROOT/alloc and ROOT/runtime/<folder>, and
# every quoted include of the form "folder/file". An include of a folder
# that the table below does not allow from the including file's folder is
# an error, as is a source folder the table does not know. Prints each
# offending include as "<file>:<line>: <folder> includes <target>".
#
# Then every .c and .h file of the folders in ck_folders (the library, the
# Python module, the public headers and the programs around them): an
# include of a ck header (<ck_*.h>, or its port folders gcc/ and
# spinlock/) outside runtime/core/ is an error, "<file>:<line>: includes
# <header> outside runtime/core/", unless the file is in ck_allowed. The
# rest of the tree reaches ck through core/atomic.h, core/refcount.h and
# core/rwlock.h.
#
# Fails on any error; otherwise prints the number of includes checked.
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

# Where a ck include is looked for, and the files outside runtime/core/
# that may have one, each with its reason (a folder ends with /).
set(ck_folders alloc runtime python include stress fuzz tests)
set(ck_allowed
  # The stress harness's hand-off queue (ck_ring), a test tool, not the
  # library (stress/ring.c says so).
  stress/ring.c
  # The control of the public-header check (tests/consumer/): a public
  # header that includes ck_pr.h, which that check must name.
  tests/consumer/control/
  # This check's own control: a storage file that includes ck_pr.h.
  tests/layers/control_ck/)

if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_includes.cmake")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/lines.cmake)

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
  matching_lines(${file} "^[ \t]*#[ \t]*include[ \t]*\"([^/\"]+)/" inc)
  foreach(n to IN ZIP_LISTS inc_numbers inc_groups)
    math(EXPR checked "${checked} + 1")
    if(NOT to IN_LIST allowed_${from})
      message(SEND_ERROR "${rel}:${n}: ${from} includes ${to}")
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
endforeach()

set(ck_globs)
foreach(folder ${ck_folders})
  list(APPEND ck_globs ${ROOT}/${folder}/*.c ${ROOT}/${folder}/*.h)
endforeach()
file(GLOB_RECURSE ck_sources LIST_DIRECTORIES false ${ck_globs})
set(ck_checked 0)
foreach(file ${ck_sources})
  file(RELATIVE_PATH rel ${ROOT} ${file})
  if(rel MATCHES "^runtime/core/")
    continue()
  endif()
  set(allowed OFF)
  foreach(a ${ck_allowed})
    string(LENGTH "${a}" alen)
    string(SUBSTRING "${rel}" 0 ${alen} head)
    if((a MATCHES "/$" AND head STREQUAL a) OR rel STREQUAL a)
      set(allowed ON)
    endif()
  endforeach()
  if(allowed)
    continue()
  endif()
  math(EXPR ck_checked "${ck_checked} + 1")
  matching_lines(${file}
    "^[ \t]*#[ \t]*include[ \t]*[<\"]((ck_|gcc/|spinlock/)[^>\"]*)[>\"]" ck)
  foreach(n header IN ZIP_LISTS ck_numbers ck_groups)
    message(SEND_ERROR "${rel}:${n}: includes ${header} outside runtime/core/")
    math(EXPR bad "${bad} + 1")
  endforeach()
endforeach()

if(bad GREATER 0)
  message(FATAL_ERROR "check_includes: ${bad} include(s) against the layers or the ck rule")
endif()
list(LENGTH sources nfiles)
message(STATUS "check_includes: ${checked} includes in ${nfiles} files follow the layers; "
  "no ck include outside runtime/core/ in ${ck_checked} files")
