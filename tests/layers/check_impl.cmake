# check_impl.cmake - a tensor's implementation is chosen only through its
# table (runtime/tensor/impl.h):
#
#   cmake -DROOT=<source tree> -P check_impl.cmake
#
# Reads every .c and .h file in ROOT/runtime. A line of code that compares
# implementations is an error, "<file>:<line>: compares implementations
# outside impl.h", unless the file is in impl_allowed: a comparison of a
# tensor's @impl ("->impl ==", "!= x->impl", ...), of a table's address
# ("== &cow__fn_impl", ...), of its state ("->impl_state !=", a stand-in
# for the implementation), or any use of the old field "->ext". A public
# function calls its tensor's table; a call with two tensors goes to the
# table cow__impl_of2() picks; the fast paths that skip the table ask
# cow__tensor_is_strided(). Calling a table's entry, or testing one
# ("->impl->destroy != NULL"), is not a comparison. Comment lines are
# skipped; a comparison split across lines is not seen.
#
# Fails on any error; otherwise prints the number of lines checked.
cmake_minimum_required(VERSION 3.25)

# The files that may compare implementations, each with its reason.
set(impl_allowed
  # The two comparisons: cow__tensor_is_strided() and cow__impl_of2().
  runtime/tensor/impl.h
  # cow__fn_of(): the functional implementation knows its own tensors.
  runtime/functional/functional.h)

if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_impl.cmake")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/lines.cmake)

set(cmp "[!=]=")
set(patterns
  "->impl(_state)?[ \t]*${cmp}"
  "${cmp}[^;&|,?:]*->impl(_state)?([^_>A-Za-z0-9]|$)"
  "&cow__[A-Za-z0-9_]*impl[ \t]*${cmp}"
  "${cmp}[ \t]*&cow__[A-Za-z0-9_]*impl([^_A-Za-z0-9]|$)"
  "->ext([^A-Za-z0-9_]|$)")
# All of them in one regex ("|" binds loosest): a line matches it when it
# matches any.
list(JOIN patterns "|" any_pattern)

file(GLOB_RECURSE sources LIST_DIRECTORIES false
  ${ROOT}/runtime/*.c ${ROOT}/runtime/*.h)
set(bad 0)
set(checked 0)
foreach(file ${sources})
  file(RELATIVE_PATH rel ${ROOT} ${file})
  if(rel IN_LIST impl_allowed)
    continue()
  endif()
  matching_lines(${file} "^[ \t]*(/[*]|[*]|//)" comment)
  matching_lines(${file} "${any_pattern}" hit)
  list(LENGTH comment_numbers ncomments)
  math(EXPR checked "${checked} + ${hit_count} - ${ncomments}")
  foreach(n IN LISTS hit_numbers)
    if(NOT n IN_LIST comment_numbers)
      message(SEND_ERROR "${rel}:${n}: compares implementations outside impl.h")
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
endforeach()

if(bad GREATER 0)
  message(FATAL_ERROR "check_impl: ${bad} comparison(s) of implementations outside impl.h")
endif()
message(STATUS "check_impl: ${checked} lines checked, every implementation chosen through its table")
