# CMake toolchain for aarch64 Linux on an x86_64 Debian host: Debian's cross compiler, the
# arm64 multiarch packages (/usr/lib/aarch64-linux-gnu) for libraries, and qemu-user to run
# what was built (tests, gtest_discover_tests). Used by scripts/cross/check-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Libraries, CMake packages and pkg-config files of the arm64 architecture only; programs
# (pkg-config, protoc, ...) from the host.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# The binaries' loader and libc come from the arm64 multiarch packages (libc6:arm64), so qemu
# looks them up from / (-L /). Not from /usr/aarch64-linux-gnu: that glibc (libc6-arm64-cross)
# is a different build, and its ld.so with the multiarch libc.so.6 corrupts dynamic-linker state
# (pthread_create loops forever).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /)
