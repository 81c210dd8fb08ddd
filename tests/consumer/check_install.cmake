# Install the build tree into a scratch prefix, then build a consumer against
# it twice: with find_package(cowstore) and with pkg-config.
set(prefix ${BINARY_DIR}/consumer-prefix)
file(REMOVE_RECURSE ${prefix} ${BINARY_DIR}/consumer-cmake ${BINARY_DIR}/consumer-pc)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix}
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
foreach(kind cmake pc)
  set(use_pc OFF)
  if(kind STREQUAL "pc")
    set(use_pc ON)
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer
      -B ${BINARY_DIR}/consumer-${kind} -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DUSE_PKG_CONFIG=${use_pc}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "consumer (${kind}) configure failed:\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR}/consumer-${kind}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "consumer (${kind}) build failed:\n${out}")
  endif()
  execute_process(COMMAND ${BINARY_DIR}/consumer-${kind}/consumer
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "consumer (${kind}) run failed:\n${out}")
  endif()
  message(STATUS "consumer (${kind}): ${out}")
endforeach()
