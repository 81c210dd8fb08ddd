# lines.cmake - what the layers checks share (included, not run).

# matching_lines(FILE REGEX OUT): OUT_numbers, the numbers (from 1) of the
# lines of FILE, as file(STRINGS) reads them, that match REGEX; OUT_groups,
# the first group of each match; OUT_count, how many lines FILE has.
function(matching_lines file regex out)
  file(STRINGS ${file} lines)
  set(n 0)
  set(numbers)
  set(groups)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "${regex}")
      list(APPEND numbers ${n})
      list(APPEND groups "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out}_numbers ${numbers} PARENT_SCOPE)
  set(${out}_groups ${groups} PARENT_SCOPE)
  set(${out}_count ${n} PARENT_SCOPE)
endfunction()
