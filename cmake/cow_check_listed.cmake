# cow_check_listed.cmake - sources are listed, never globbed (CMakeLists.txt,
# tests/CMakeLists.txt); this catches a file that no list names, which would
# otherwise silently not be built or not be run.
#
# cow_check_listed(DIR PATTERN LISTED): stop with FATAL_ERROR if a file
# matching PATTERN (relative to DIR) is not in LISTED (full paths). The
# configure reruns when such a file appears (CONFIGURE_DEPENDS). Its
# control: ctest layers.control.unlisted_source.
function(cow_check_listed dir pattern listed)
  if(CMAKE_SCRIPT_MODE_FILE)
    file(GLOB _found ${dir}/${pattern})
  else()
    file(GLOB _found CONFIGURE_DEPENDS ${dir}/${pattern})
  endif()
  foreach(f ${_found})
    if(NOT f IN_LIST listed)
      message(FATAL_ERROR "cowstore: ${f} is in no source list: add it to "
        "the list that builds ${dir}/${pattern}")
    endif()
  endforeach()
endfunction()
