# hangwatch_link_static_archives(TARGET DEPS...): links TARGET (an executable) with DEPS and
# everything they pull in, taking each third-party library from its static archive (lib*.a next
# to the shared one, or pkg-config's --static list) wherever the system ships one. What has no
# archive (glibc, spdlog and fmt on Debian 12) stays shared, behind --as-needed so that it is not
# loaded at all unless something refers to it.
#
# Why: `hangwatch snapshot PID` is a short-lived process. Linked the usual way it loads about 40
# shared libraries (most of them tiny libabsl_*.so), and loading and relocating them took longer
# than taking the snapshot itself.
#
# Returns with HANGWATCH_STATIC_LINK_RESULT set to "" when done, else to the reason it could not
# (then nothing was linked and the caller links DEPS the usual way).

# Maps one shared library path to its static archive; "" when there is none.
function(_hangwatch_static_archive_of path out)
  set(result "")
  if(path MATCHES "\\.a$" AND EXISTS "${path}")
    set(result "${path}")
  elseif(path MATCHES "^(.*)\\.so(\\.[0-9.]+)?$")
    if(EXISTS "${CMAKE_MATCH_1}.a")
      set(result "${CMAKE_MATCH_1}.a")
    endif()
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# Resolves a plain library name ("z", "bz2") to lib<name>.a in `dirs` or the default paths.
function(_hangwatch_static_archive_named name dirs out)
  string(MAKE_C_IDENTIFIER "${name}" id)
  find_library(HANGWATCH_STATIC_ARCHIVE_${id} NAMES lib${name}.a HINTS ${dirs})
  mark_as_advanced(HANGWATCH_STATIC_ARCHIVE_${id})
  if(HANGWATCH_STATIC_ARCHIVE_${id})
    set(${out} "${HANGWATCH_STATIC_ARCHIVE_${id}}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# Appends to the lists archives / shared / flags of the caller the link items of `item`
# (a target, a path or a flag) and, depth first, of everything it links.
macro(_hangwatch_collect item)
  set(_it "${item}")
  if(_it MATCHES "^\\$<LINK_ONLY:(.*)>$")
    set(_it "${CMAKE_MATCH_1}")
  endif()
  if(_it MATCHES "^\\$<\\$<PLATFORM_ID:([A-Za-z]+)>:(.*)>$")
    if(CMAKE_MATCH_1 STREQUAL CMAKE_SYSTEM_NAME)
      set(_it "${CMAKE_MATCH_2}")
    else()
      set(_it "")
    endif()
  endif()
  if(_it STREQUAL "" OR _it IN_LIST _seen)
    # nothing, or already collected
  elseif(_it MATCHES "^\\$<")
    list(APPEND shared "${_it}")  # left to CMake: any other generator expression
  elseif(_it MATCHES "^PkgConfig::(.+)$")
    # pkg_check_modules(IMPORTED_TARGET) targets are local to the directory that made them;
    # its cache variables are not. `pkg-config --static` lists what the archive needs too
    # (libdw.a needs libbz2...).
    list(APPEND _seen "${_it}")
    set(_prefix "${CMAKE_MATCH_1}")
    if(NOT DEFINED ${_prefix}_STATIC_LIBRARIES)
      set(HANGWATCH_STATIC_LINK_RESULT "no pkg-config --static list for ${_it}")
    endif()
    foreach(_name IN LISTS ${_prefix}_STATIC_LIBRARIES)
      _hangwatch_static_archive_named("${_name}" "${${_prefix}_LIBRARY_DIRS}" _archive)
      if(_name STREQUAL "pthread" OR _name STREQUAL "dl")
        list(APPEND flags "-l${_name}")  # part of glibc
      elseif(_archive)
        list(APPEND archives "${_archive}")
      else()
        # No archive: the shared library then, if its development link is there at all
        # (libdw.a needs libbz2, which libdw-dev does not pull in).
        string(MAKE_C_IDENTIFIER "${_name}" _id)
        find_library(HANGWATCH_SHARED_LIBRARY_${_id} NAMES ${_name}
                     HINTS ${${_prefix}_LIBRARY_DIRS})
        mark_as_advanced(HANGWATCH_SHARED_LIBRARY_${_id})
        if(HANGWATCH_SHARED_LIBRARY_${_id})
          list(APPEND shared "${HANGWATCH_SHARED_LIBRARY_${_id}}")
        else()
          set(HANGWATCH_STATIC_LINK_RESULT
              "lib${_name}, which the static ${_it} needs, is not installed")
        endif()
      endif()
    endforeach()
  elseif(_it STREQUAL "ZLIB::ZLIB" AND NOT TARGET ZLIB::ZLIB)
    # find_package(ZLIB)'s target is local to the directory that found it.
    list(APPEND _seen "${_it}")
    _hangwatch_static_archive_named(z "" _archive)
    if(_archive)
      list(APPEND archives "${_archive}")
    else()
      list(APPEND flags "-lz")
    endif()
  elseif(TARGET "${_it}")
    list(APPEND _seen "${_it}")
    get_target_property(_aliased "${_it}" ALIASED_TARGET)
    if(_aliased)
      set(_it "${_aliased}")
    endif()
    get_target_property(_type "${_it}" TYPE)
    get_target_property(_imported "${_it}" IMPORTED)
    if(NOT _imported AND _type STREQUAL "STATIC_LIBRARY")
      list(APPEND archives "$<TARGET_FILE:${_it}>")
    elseif(NOT _imported AND NOT _type STREQUAL "INTERFACE_LIBRARY")
      set(HANGWATCH_STATIC_LINK_RESULT "${_it} is a ${_type}")
    elseif(_imported AND NOT _type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(_loc "${_it}" IMPORTED_LOCATION)
      if(NOT _loc)
        get_target_property(_configs "${_it}" IMPORTED_CONFIGURATIONS)
        list(GET _configs 0 _config)
        get_target_property(_loc "${_it}" IMPORTED_LOCATION_${_config})
      endif()
      _hangwatch_static_archive_of("${_loc}" _archive)
      if(_archive)
        list(APPEND archives "${_archive}")
      elseif(_loc)
        list(APPEND shared "${_loc}")
      endif()
    endif()
    get_target_property(_deps "${_it}" INTERFACE_LINK_LIBRARIES)
    if(_deps)
      # A stack of pending items: macros share the caller's scope, so no recursion.
      list(PREPEND _pending ${_deps})
    endif()
  elseif(_it MATCHES "^/")
    list(APPEND _seen "${_it}")
    _hangwatch_static_archive_of("${_it}" _archive)
    if(_archive)
      list(APPEND archives "${_archive}")
    else()
      list(APPEND shared "${_it}")
    endif()
  elseif(_it MATCHES "^-")
    list(APPEND flags "${_it}")
  elseif(_it MATCHES "::")
    set(HANGWATCH_STATIC_LINK_RESULT "${_it} is not visible from ${CMAKE_CURRENT_SOURCE_DIR}")
  else()
    list(APPEND flags "-l${_it}")  # a plain name (dl, atomic...)
  endif()
endmacro()

function(hangwatch_link_static_archives target)
  set(HANGWATCH_STATIC_LINK_RESULT "")
  set(archives "")
  set(shared "")
  set(flags "")
  set(_seen "")
  set(_pending ${ARGN})
  while(_pending)
    list(POP_FRONT _pending _next)
    _hangwatch_collect("${_next}")
  endwhile()
  if(NOT HANGWATCH_STATIC_LINK_RESULT STREQUAL "")
    set(HANGWATCH_STATIC_LINK_RESULT "${HANGWATCH_STATIC_LINK_RESULT}" PARENT_SCOPE)
    return()
  endif()
  list(REMOVE_DUPLICATES archives)
  list(REMOVE_DUPLICATES shared)
  # Everything after the group is linked --as-needed already: drop the state switches that
  # some targets wrap their flags in (absl: -latomic), then the duplicates.
  list(FILTER flags EXCLUDE REGEX "^-Wl,--(push|pop)-state")
  list(REMOVE_DUPLICATES flags)
  # glibc too, when its archive is installed (libc6-dev ships it): a static executable skips the
  # dynamic loader altogether (mapping and relocating libc and libm cost `hangwatch snapshot`
  # about 0.4 ms of its ~2.5). The shared libraries without an archive are then left out: the
  # CLI does not use them (spdlog, fmt: --as-needed drops them from the dynamic link too); if it
  # ever does, the link fails on their symbols: turn HANGWATCH_STATIC_CLI_GLIBC off.
  find_library(HANGWATCH_STATIC_ARCHIVE_c NAMES libc.a)
  mark_as_advanced(HANGWATCH_STATIC_ARCHIVE_c)
  if(HANGWATCH_STATIC_CLI_GLIBC AND HANGWATCH_STATIC_ARCHIVE_c)
    set(shared "")
    target_link_options(${target} PRIVATE -static)
  endif()
  # One group: the archives refer to each other in every direction (libdw <-> libelf...).
  target_link_libraries(${target} PRIVATE
    "-Wl,--start-group" ${archives} "-Wl,--end-group"
    "-Wl,--push-state,--as-needed" ${shared} ${flags} "-Wl,--pop-state")
  if(HANGWATCH_STATIC_LINK_SHARED_LIBSTDCXX)
    # A program that also loads a shared C++ library (hangwatch-top: libsimdjson) keeps the one
    # shared libstdc++ that library uses.
    target_link_options(${target} PRIVATE "LINKER:-O1")
  else()
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc "LINKER:-O1")
  endif()
  foreach(dep IN LISTS ARGN)
    if(TARGET ${dep})
      add_dependencies(${target} ${dep})
    endif()
  endforeach()
  set(HANGWATCH_STATIC_LINK_RESULT "" PARENT_SCOPE)
endfunction()
