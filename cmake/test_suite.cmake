# The test binaries as one set: what a build tree must build to run its ctest suite, and one
# precompiled GoogleTest header shared by all of them. tests/CMakeLists.txt calls
# hangwatch_finish_test_suite() once every test folder has defined its targets, so no folder has
# to opt in.

option(HANGWATCH_TEST_PCH "Precompile GoogleTest's headers once, for every test binary" ON)
# The optimisation of the GoogleTest binaries' own sources (not of the libraries they test, nor
# of the fixture programs whose frames they check, which keep the build type's): at -O0 a
# heavy test file compiles in under half the CPU time of -O2 -g (export_command_test.cc:
# 7.6 s against 17.1 s), and the test sources are 60 % of the build. Empty: the build type's.
set(HANGWATCH_TEST_OPTIMIZATION "-O0" CACHE STRING
    "Optimisation flag for the test binaries' own sources (empty: the build type's)")

# hangwatch_targets_below(<out> <dir>): every target defined in <dir> and its subdirectories.
function(hangwatch_targets_below out dir)
  get_property(found DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    hangwatch_targets_below(below ${sub})
    list(APPEND found ${below})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# hangwatch_share_test_pch(<gtest binaries...>): these GoogleTest binaries compile against one precompiled <gtest/gtest.h> and
# <gmock/gmock.h>, made once by hangwatch_test_pch, instead of parsing them in every source
# file (about a second each). GCC uses a precompiled header only when the flags that matter
# match; -Winvalid-pch (an error under -Werror) makes a mismatch fail the build instead of
# silently parsing the headers again.
function(hangwatch_share_test_pch)
  add_executable(hangwatch_test_pch ${PROJECT_SOURCE_DIR}/tests/test_pch.cc)
  target_link_libraries(hangwatch_test_pch PRIVATE hangwatch_test_support)
  target_precompile_headers(hangwatch_test_pch PRIVATE <gtest/gtest.h> <gmock/gmock.h>)
  # The header is used only by sources compiled with the same flags.
  target_compile_options(hangwatch_test_pch PRIVATE ${HANGWATCH_TEST_OPTIMIZATION})
  hangwatch_target_warnings(hangwatch_test_pch)
  foreach(target ${ARGN})
    target_precompile_headers(${target} REUSE_FROM hangwatch_test_pch)
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endforeach()
endfunction()

# hangwatch_finish_test_suite(): called at the end of tests/CMakeLists.txt.
#  - hangwatch_tests: every target of tests/ that `all` builds, and what they depend on (the
#    libraries, `hangwatch`, `hangwatch-top`), and nothing else: no benchmark, no example. A
#    sanitizer tree builds this target; the tests its ctest run leaves out (labels no_asan and
#    real_component) are not defined there (the test folders skip them under HANGWATCH_ASAN).
#  - the shared precompiled header (HANGWATCH_TEST_PCH).
function(hangwatch_finish_test_suite)
  hangwatch_targets_below(targets ${PROJECT_SOURCE_DIR}/tests)
  # The GoogleTest binaries (executables linking hangwatch_test_support) whose own sources take
  # HANGWATCH_TEST_OPTIMIZATION, and with it the shared header; HANGWATCH_OPTIMIZED_TESTS keep
  # the build type's flags and parse the headers themselves.
  set(gtests)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    get_target_property(libs ${target} LINK_LIBRARIES)
    if(type STREQUAL "EXECUTABLE" AND "hangwatch_test_support" IN_LIST libs
       AND (NOT HANGWATCH_TEST_OPTIMIZATION OR NOT target IN_LIST HANGWATCH_OPTIMIZED_TESTS))
      list(APPEND gtests ${target})
    endif()
  endforeach()
  if(HANGWATCH_TEST_OPTIMIZATION)
    # Target options come after CMAKE_CXX_FLAGS_<CONFIG> on the command line: the last -O wins.
    foreach(target ${gtests})
      target_compile_options(${target} PRIVATE ${HANGWATCH_TEST_OPTIMIZATION})
    endforeach()
  endif()
  if(HANGWATCH_TEST_PCH)
    hangwatch_share_test_pch(${gtests})
  endif()
  set(built)
  foreach(target ${targets})
    get_target_property(excluded ${target} EXCLUDE_FROM_ALL)
    get_target_property(type ${target} TYPE)
    if(NOT excluded AND NOT type STREQUAL "INTERFACE_LIBRARY")
      list(APPEND built ${target})
    endif()
  endforeach()
  add_custom_target(hangwatch_tests)
  add_dependencies(hangwatch_tests ${built})
endfunction()
