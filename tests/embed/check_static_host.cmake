# Build static_host.c against a static libcowstore with nothing but
# -lpthread -lm, then run it.
#   cmake -DCC=... -DSOURCE_DIR=... -DLIBRARY=libcowstore.a -DOUT=exe
#         -DMODE=libc|own [-DDEFINES=-DX;-DY] [-DEXTRA=file.c] -P this
set(src ${SOURCE_DIR}/tests/embed/static_host.c)
execute_process(COMMAND ${CC} -std=c11 -O1 ${DEFINES}
    -I${SOURCE_DIR}/include -I${GENERATED_INCLUDE} ${src} ${EXTRA} ${LIBRARY} -lpthread -lm -o ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "static host (${MODE}): the link failed:\n${out}")
endif()
execute_process(COMMAND ${OUT} ${MODE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "static host (${MODE}) failed (${rc}):\n${out}")
endif()
message(STATUS "${out}")
