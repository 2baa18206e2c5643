# What an Apple (macOS / iOS) build compiles, per folder, as paths from the repository root.
#
# Read through hangwatch_folder_sources (below) by unwind/, symbols/, hang/ and agent/'s CMakeLists.txt
# (report/'s, whose sources are all portable, lists them itself), and by
# scripts/cross/check-macos, which compiles these same lists for arm64 and x86_64 macOS on Linux
# (`cmake -P` on this file prints them), so that the Mach backend and the agent around it cannot
# rot where nobody builds them.
#
# Linux builds glob each folder's top level (each room's: agent/core/, hang/model/, ...; and the
# portable subfolders it names: symbols/index/, symbols/macho/) instead; the Apple-only code
# lives in mach/ subfolders (unwind/mach/, agent/core/mach/, agent/samplers/mach/), which those
# globs do not reach, and in
# HANGWATCH_APPLE_ONLY_SOURCES, which they leave out.
#
#   HANGWATCH_APPLE_UNWIND_SOURCES   the portable capture code and the Mach sampler
#   HANGWATCH_APPLE_SYMBOLS_SOURCES  Mach-O parsing and dyld's module list (the rest of
#                                    symbols/ reads ELF and DWARF through elfutils)
#   HANGWATCH_APPLE_REPORT_SOURCES   the report format's encoders and stack identity
#   HANGWATCH_APPLE_HANG_SOURCES     the hang below the agent: the agent's files, the hang
#                                    model, the open-hang file
#   HANGWATCH_APPLE_AGENT_SOURCES    the agent's rooms, with the Mach watchdog environment and
#                                    sampler in place of the /proc and signal ones

set(HANGWATCH_APPLE_UNWIND_SOURCES
  unwind/capture_hook.cc
  unwind/frame_walker.cc
  unwind/pointer_auth.cc
  unwind/thread_capture.cc
  unwind/mach/mach_sampler.cc
  unwind/mach/thread_registration.cc)

set(HANGWATCH_APPLE_SYMBOLS_SOURCES
  symbols/macho/dyld_modules.cc
  symbols/macho/macho_parser.cc)

# The report format's encoders and a stack's identity (portable; the decoder needs
# nlohmann_json and is the tools').
set(HANGWATCH_APPLE_REPORT_SOURCES
  report/cause_text.cc
  report/context_encode.cc
  report/frame_classifier.cc
  report/hang_record.cc
  report/lag_text.cc
  report/pass_histogram.cc
  report/report_encode.cc
  report/stack_identity.cc
  report/trigger_kind.cc
  report/utf8.cc)

# Every .cc of the agent's rooms but the Linux-only ones (each has its Apple twin in a mach/
# subfolder of its room: agent/core/mach/, agent/samplers/mach/; except wait_cause_probe.cc and
# wait_fd_cause.cc, over the Linux-only cause/: Apple platforms have no probe; and
# python_stacks.cc, ruby_stacks.cc and js_stacks.cc, over the Linux-only python/, ruby/ and js/;
# and display_input.cc, which finds an X11 or Wayland connection through /proc: context_probe.cc
# reads labels and sources alone there).
set(HANGWATCH_LINUX_ONLY_AGENT_SOURCES agent/core/watchdog_env.cc
    agent/samplers/platform_sampler.cc agent/samplers/wait_cause_probe.cc
    agent/samplers/wait_fd_cause.cc agent/samplers/python_stacks.cc
    agent/samplers/ruby_stacks.cc agent/samplers/js_stacks.cc
    agent/samplers/jvm_perf_map_request.cc agent/context/display_input.cc)
get_filename_component(_hangwatch_root ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
file(GLOB_RECURSE HANGWATCH_APPLE_AGENT_SOURCES RELATIVE ${_hangwatch_root}
     ${_hangwatch_root}/agent/*.cc)
list(REMOVE_ITEM HANGWATCH_APPLE_AGENT_SOURCES ${HANGWATCH_LINUX_ONLY_AGENT_SOURCES})
list(SORT HANGWATCH_APPLE_AGENT_SOURCES)

# The hang below the agent (hang/: its files, its model, the open-hang file): all portable.
file(GLOB_RECURSE HANGWATCH_APPLE_HANG_SOURCES RELATIVE ${_hangwatch_root}
     ${_hangwatch_root}/hang/*.cc)
list(SORT HANGWATCH_APPLE_HANG_SOURCES)

# Apple-only files in a subfolder that other platforms build too (symbols/macho/ holds the
# portable Mach-O parser, tested and fuzzed on Linux, beside dyld's module list).
set(HANGWATCH_APPLE_ONLY_SOURCES symbols/macho/dyld_modules.cc)

# hangwatch_folder_sources(<var> <folder> [<subfolder>...]): the sources of the library built
# from <folder> ("unwind", "symbols", or a room: "agent/core", "hang/model"): on Apple platforms
# the entries of its top folder's list above that lie under <folder>/; elsewhere every .cc at
# the folder's top level and in the <subfolder>s named (symbols: index/, macho/), each with its
# internal/ subfolder, but HANGWATCH_APPLE_ONLY_SOURCES. Apple-only subfolders (mach/) are
# never named.
function(hangwatch_folder_sources var folder)
  if(APPLE)
    string(REGEX REPLACE "/.*" "" top ${folder})
    string(TOUPPER ${top} name)
    set(sources "")
    foreach(source ${HANGWATCH_APPLE_${name}_SOURCES})
      if(source MATCHES "^${folder}/")
        list(APPEND sources ${PROJECT_SOURCE_DIR}/${source})
      endif()
    endforeach()
  else()
    set(globs ${PROJECT_SOURCE_DIR}/${folder}/*.cc ${PROJECT_SOURCE_DIR}/${folder}/internal/*.cc)
    foreach(subfolder ${ARGN})
      list(APPEND globs ${PROJECT_SOURCE_DIR}/${folder}/${subfolder}/*.cc
           ${PROJECT_SOURCE_DIR}/${folder}/${subfolder}/internal/*.cc)
    endforeach()
    file(GLOB sources CONFIGURE_DEPENDS ${globs})
    list(TRANSFORM HANGWATCH_APPLE_ONLY_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/
         OUTPUT_VARIABLE apple_only)
    list(REMOVE_ITEM sources ${apple_only})
  endif()
  set(${var} ${sources} PARENT_SCOPE)
endfunction()

# `cmake -DLIST=UNWIND -P cmake/apple_sources.cmake` prints one list, a path per line.
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED LIST)
  foreach(source ${HANGWATCH_APPLE_${LIST}_SOURCES})
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo ${source})
  endforeach()
endif()
