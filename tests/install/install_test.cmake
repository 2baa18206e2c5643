# cmake -P script: install, then build and run the consumer two ways. Fails on any error.
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(f include/hangwatch/hangwatch.h lib/cmake/hangwatch/hangwatchConfig.cmake
          lib/pkgconfig/hangwatch.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

# 1. CMake package.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/consumer -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CXX})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)

# 2. pkg-config.
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
execute_process(COMMAND pkg-config --cflags --libs hangwatch OUTPUT_VARIABLE flags
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config does not know hangwatch")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CXX} -std=c++20 ${SOURCE_DIR}/main.cc -o ${WORK_DIR}/consumer_pc ${flags}
    -Wl,-rpath,${prefix}/lib)
run(${WORK_DIR}/consumer_pc)

# 3. The preload shim, where the platform has it: the loader and its agent library installed side
# by side, and `hangwatch run` from the prefix watching a program with them (the installed loader
# loads the agent library from its own directory, the prefix's).
if(PRELOAD)
  foreach(f bin/hangwatch lib/libhangwatch_preload.so lib/libhangwatch_preload_agent.so)
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "not installed: ${f}")
    endif()
  endforeach()
  # A program that reaches an event loop: one blocking poll.
  file(WRITE ${WORK_DIR}/waiter.cc
       "#include <poll.h>\nint main() { return poll(nullptr, 0, 50) == 0 ? 0 : 1; }\n")
  run(${CXX} -o ${WORK_DIR}/waiter ${WORK_DIR}/waiter.cc)
  execute_process(COMMAND ${prefix}/bin/hangwatch run -- ${WORK_DIR}/waiter
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT err MATCHES "watched 1 process")
    message(FATAL_ERROR "the installed shim did not watch a waiting program (${rc}):\n${err}")
  endif()
endif()
