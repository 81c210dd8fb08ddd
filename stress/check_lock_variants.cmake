# check_lock_variants.cmake - every context lock that runtime/core/rwlock.h
# can be built with (a COW_LOCK_<NAME> it tests) is in COW_LOCK_VARIANTS, so
# it is built and stress-tested in every configuration.
#   cmake -DRWLOCK_H=<rwlock.h> -DVARIANTS=NAME|NAME... -P check_lock_variants.cmake
file(READ ${RWLOCK_H} text)
string(REGEX MATCHALL "defined\\(COW_LOCK_[A-Z0-9_]+\\)" uses "${text}")
string(REPLACE "|" ";" listed "${VARIANTS}")
set(seen "")
foreach(use ${uses})
  string(REGEX REPLACE "defined\\(COW_LOCK_([A-Z0-9_]+)\\)" "\\1" name "${use}")
  list(APPEND seen ${name})
endforeach()
list(REMOVE_DUPLICATES seen)
if(NOT seen)
  message(FATAL_ERROR "no COW_LOCK_* choice found in ${RWLOCK_H}")
endif()
foreach(name ${seen})
  list(FIND listed ${name} at)
  if(at EQUAL -1)
    message(FATAL_ERROR "rwlock.h can be built with COW_LOCK_${name}, which is "
      "not in COW_LOCK_VARIANTS (CMakeLists.txt): it would never be stress-tested")
  endif()
endforeach()
message("lock variants in rwlock.h: ${seen}; all listed")
