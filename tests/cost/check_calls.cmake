# check_calls.cmake - disassemble FUNCTION in OBJECT and check whether it
# calls out or uses a locked (atomic) instruction.
#   cmake -DOBJDUMP=... -DOBJECT=... -DFUNCTION=... -DEXPECT=none|calls -P check_calls.cmake
# EXPECT=none: the body must be free of calls, tail jumps and lock prefixes.
# EXPECT=calls: it must contain at least one call or tail jump (the negative
# control: proves the check sees a call when there is one).
cmake_policy(VERSION 3.25)
execute_process(COMMAND ${OBJDUMP} -dr --no-show-raw-insn ${OBJECT}
  OUTPUT_VARIABLE dis RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "objdump failed on ${OBJECT}")
endif()
string(REGEX MATCH "<${FUNCTION}>:\n([^\n]+\n)+" body "${dis}")
if(body STREQUAL "")
  message(FATAL_ERROR "${FUNCTION} not found in ${OBJECT}:\n${dis}")
endif()
# In an unlinked object a call or tail jump to another function carries a
# PLT32 relocation; a locked instruction is an atomic read-modify-write.
string(REGEX MATCHALL "[^\n]*(call|lock|R_X86_64_PLT32)[^\n]*" calls "${body}")
list(LENGTH calls n)
message("${FUNCTION}:\n${body}")
if(EXPECT STREQUAL "none" AND n GREATER 0)
  message(FATAL_ERROR "expected no call or locked instruction, found:\n${calls}")
elseif(EXPECT STREQUAL "calls" AND n EQUAL 0)
  message(FATAL_ERROR "expected a call (debug mode), found none")
endif()
message("ok: ${n} call/lock instruction(s), expected ${EXPECT}")
