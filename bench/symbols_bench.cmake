# symbols_bench measures LLVM's GSYM reader beside hangwatch's index when llvm-14-dev is present.
find_path(HANGWATCH_GSYM_INCLUDE llvm/DebugInfo/GSYM/GsymReader.h HINTS /usr/lib/llvm-14/include)
find_library(HANGWATCH_LIBLLVM NAMES LLVM-14 LLVM HINTS /usr/lib/llvm-14/lib)
if(HANGWATCH_GSYM_INCLUDE AND HANGWATCH_LIBLLVM)
  target_include_directories(symbols_bench SYSTEM PRIVATE ${HANGWATCH_GSYM_INCLUDE})
  target_compile_definitions(symbols_bench PRIVATE HANGWATCH_HAVE_GSYM=1)
  target_link_libraries(symbols_bench PRIVATE ${HANGWATCH_LIBLLVM})
endif()
