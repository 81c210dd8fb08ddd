# aarch64-linux-gnu.cmake - cross toolchain for the arm64 preset
# (docs/arm64.md): Debian's cross compiler (gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross), the target's ConcurrencyKit and Criterion from the
# sysroot that scripts/arm64-sysroot.sh unpacks (never arm64 packages
# installed on the host), and qemu-user to run the tests.
#
# COW_ARM64_SYSROOT: that sysroot (default: where the script puts it,
# ${XDG_CACHE_HOME:-$HOME/.cache}/cowstore/arm64-sysroot).

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
# The GNU triple: the compiler's prefix, jemalloc's --host (cmake/jemalloc.cmake).
set(COW_CROSS_HOST aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${COW_CROSS_HOST}-gcc)

# The cross toolchain's own root (its libc, libgcc).
set(COW_CROSS_LIBC_ROOT /usr/${COW_CROSS_HOST})

if(NOT COW_ARM64_SYSROOT)
  if(DEFINED ENV{COW_ARM64_SYSROOT} AND NOT "$ENV{COW_ARM64_SYSROOT}" STREQUAL "")
    set(COW_ARM64_SYSROOT "$ENV{COW_ARM64_SYSROOT}")
  elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(COW_ARM64_SYSROOT "$ENV{XDG_CACHE_HOME}/cowstore/arm64-sysroot")
  else()
    set(COW_ARM64_SYSROOT "$ENV{HOME}/.cache/cowstore/arm64-sysroot")
  endif()
endif()
set(COW_ARM64_SYSROOT "${COW_ARM64_SYSROOT}" CACHE PATH
  "arm64 libraries and headers (scripts/arm64-sysroot.sh)")
if(NOT EXISTS "${COW_ARM64_SYSROOT}/.packages")
  message(FATAL_ERROR "cowstore: no arm64 sysroot in ${COW_ARM64_SYSROOT}: "
    "run scripts/arm64-sysroot.sh (or scripts/deps.sh arm64)")
endif()
set(_cow_arm64_libdirs
  "${COW_ARM64_SYSROOT}/usr/lib/${COW_CROSS_HOST}"
  "${COW_ARM64_SYSROOT}/lib/${COW_CROSS_HOST}")

# Headers and libraries of the target only: the sysroot, then the cross
# libc; programs (pkg-config, the tools) from the host.
set(CMAKE_FIND_ROOT_PATH "${COW_ARM64_SYSROOT}" "${COW_CROSS_LIBC_ROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the sysroot's .pc files only, and prefixes their paths.
set(ENV{PKG_CONFIG_LIBDIR} "${COW_ARM64_SYSROOT}/usr/lib/${COW_CROSS_HOST}/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${COW_ARM64_SYSROOT}")

# Criterion's own dependencies (libgit2, nanomsg, ...) are found at link
# time through -rpath-link, and at run time through LD_LIBRARY_PATH below.
list(JOIN _cow_arm64_libdirs ":" _cow_arm64_path)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_cow_arm64_path}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_cow_arm64_path}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_cow_arm64_path}")

# The emulator. -L: the guest's dynamic loader and libc are the cross
# toolchain's; LD_LIBRARY_PATH names that libc's directory too, so the guest
# never pairs this loader with another arm64 libc.so.6 that the host's
# ld.so.cache may list (a mismatched pair hangs in the first
# pthread_create). LD_PRELOAD: cmake/emulator_exec.c (built by
# CMakeLists.txt), so that a guest program that executes a guest program
# (Criterion's test workers) runs it under this emulator too; without
# binfmt_misc that exec fails (ENOEXEC).
find_program(COW_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(COW_EMULATOR_EXEC_SHIM "${CMAKE_BINARY_DIR}/emulator/cow_emulator_exec.so")
set(CMAKE_CROSSCOMPILING_EMULATOR
  "${COW_QEMU_AARCH64}" -L "${COW_CROSS_LIBC_ROOT}"
  -E "LD_LIBRARY_PATH=${_cow_arm64_path}:${COW_CROSS_LIBC_ROOT}/lib"
  -E "LD_PRELOAD=${COW_EMULATOR_EXEC_SHIM}"
  -E "COW_EMULATOR=${COW_QEMU_AARCH64}"
  -E "COW_EMULATOR_LD_PREFIX=${COW_CROSS_LIBC_ROOT}")
