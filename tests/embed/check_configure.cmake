# Configure the project in a scratch directory with a jemalloc cache that
# holds no source and no -DCOW_WITH_JEMALLOC=OFF: it must fail with one
# message that names both ways out.
#   cmake -DSOURCE_DIR=... -DSCRATCH=... -DCC=compiler -P this
# The negative control adds -DCACHE=DIR -DSRC=TARBALL (a cache that holds
# the build, and the source): configure then succeeds, which must fail here.
file(REMOVE_RECURSE ${SCRATCH})
set(extra -DCOW_JEMALLOC_CACHE=${SCRATCH}/empty-cache)
if(DEFINED CACHE)
  set(extra -DCOW_JEMALLOC_CACHE=${CACHE} -DCOW_JEMALLOC_SOURCE=${SRC})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${SCRATCH}/build
    -DCMAKE_C_COMPILER=${CC} -DBUILD_TESTING=OFF ${extra}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
file(REMOVE_RECURSE ${SCRATCH})
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")
if(NOT rc)
  message(FATAL_ERROR "configure succeeded without a jemalloc source")
endif()
foreach(way "-DCOW_JEMALLOC_SOURCE=" "-DCOW_WITH_JEMALLOC=OFF")
  string(FIND "${flat}" "${way}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the error does not name ${way}:\n${out}")
  endif()
endforeach()
message(STATUS "configure failed as it should:\n${out}")
