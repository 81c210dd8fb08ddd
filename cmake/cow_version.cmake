# cow_version_policy(VERSION SOVERSION_VAR COMPAT_VAR HEX_VAR): what a
# version means for binary compatibility (docs/versions.md).
#
# - 0.x: a minor release may break the ABI. The soname carries the minor
#   (libcowstore.so.0.1) and the CMake package accepts only the same minor
#   (SameMinorVersion: a request for 0.1 or 0.1.0 finds 0.1.3, a request for
#   0.2 or 0.0 does not).
# - 1.0 on: only a major release breaks the ABI. The soname carries the
#   major (libcowstore.so.1) and the package accepts any later minor of the
#   same major (SameMajorVersion).
#
# HEX_VAR receives COW_VERSION_HEX, "0xMMmmpp": one byte per component, so
# each must be 0 to 255. tests/version/check_policy.cmake checks all of this.
function(cow_version_policy version soversion_var compat_var hex_var)
  if(NOT version MATCHES "^([0-9]+)\\.([0-9]+)\\.([0-9]+)$")
    message(FATAL_ERROR "cowstore version '${version}' is not major.minor.patch")
  endif()
  set(major ${CMAKE_MATCH_1})
  set(minor ${CMAKE_MATCH_2})
  set(patch ${CMAKE_MATCH_3})
  set(hex "0x")
  foreach(part ${major} ${minor} ${patch})
    if(part GREATER 255)
      message(FATAL_ERROR "cowstore version '${version}': each component "
        "must be 0 to 255 (COW_VERSION_HEX has one byte per component)")
    endif()
    math(EXPR byte "${part}" OUTPUT_FORMAT HEXADECIMAL)
    string(SUBSTRING "${byte}" 2 -1 byte)
    string(LENGTH "${byte}" len)
    if(len EQUAL 1)
      set(byte "0${byte}")
    endif()
    string(APPEND hex "${byte}")
  endforeach()
  if(major EQUAL 0)
    set(${soversion_var} "${major}.${minor}" PARENT_SCOPE)
    set(${compat_var} SameMinorVersion PARENT_SCOPE)
  else()
    set(${soversion_var} "${major}" PARENT_SCOPE)
    set(${compat_var} SameMajorVersion PARENT_SCOPE)
  endif()
  set(${hex_var} "${hex}" PARENT_SCOPE)
endfunction()
