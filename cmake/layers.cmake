# Include trees that make the build enforce the layers (docs/architecture.md, "Layers").
#
# Code includes project headers by their path from the repository root ("unwind/registers.h").
# If the root itself were an include directory, every target could include every header, and a
# layer rule broken by one #include would go unnoticed until it was a link error, or never.
# Instead each folder gets two trees of symbolic links in the build directory:
#
#   private  <folder>/ as a whole: what the folder's own sources (and its tests) see;
#   public   <folder>/'s headers except those under an internal/ subfolder: what the targets that
#            link the folder's library see.
#
# A target sees its own private tree and the public trees of what it links, nothing else: an
# include of a layer it does not link, or of another folder's internal/ headers, does not
# compile. include/ (the installed API, "hangwatch/...") is an ordinary include directory.

set(HANGWATCH_LAYER_ROOT ${CMAKE_BINARY_DIR}/layers)

# hangwatch_layer_trees(<folder>): makes the two trees of <folder> (a path from the repository
# root, like "unwind" or "integrations/preload") and two INTERFACE targets naming them:
# hangwatch_layer_<name>_public and hangwatch_layer_<name>_private, where <name> is <folder>
# with "/" turned into "_". Headers added later re-run the configure step (CONFIGURE_DEPENDS).
function(hangwatch_layer_trees folder)
  string(REPLACE "/" "_" name ${folder})
  set(private_root ${HANGWATCH_LAYER_ROOT}/private/${name})
  set(public_root ${HANGWATCH_LAYER_ROOT}/public/${name})

  # The private tree: one link to the folder itself.
  get_filename_component(parent ${private_root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT IS_SYMLINK ${private_root}/${folder})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${private_root}/${folder} SYMBOLIC)
  endif()

  # The public tree: one link per header, made anew so that a header moved into internal/ (or
  # deleted) leaves it.
  file(REMOVE_RECURSE ${public_root})
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
       ${PROJECT_SOURCE_DIR}/${folder}/*.h)
  foreach(header ${headers})
    if(header MATCHES "/internal/")
      continue()
    endif()
    get_filename_component(dir ${public_root}/${header} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${header} ${public_root}/${header} SYMBOLIC)
  endforeach()
  file(MAKE_DIRECTORY ${public_root})

  add_library(hangwatch_layer_${name}_public INTERFACE)
  target_include_directories(hangwatch_layer_${name}_public INTERFACE
                             $<BUILD_INTERFACE:${public_root}>)
  add_library(hangwatch_layer_${name}_private INTERFACE)
  target_include_directories(hangwatch_layer_${name}_private INTERFACE
                             $<BUILD_INTERFACE:${private_root}>)
endfunction()

# hangwatch_layer(<target> <folder>): <target> is built from <folder>: its sources see the
# folder's private tree, and whatever links <target> sees the folder's public tree.
function(hangwatch_layer target folder)
  string(REPLACE "/" "_" name ${folder})
  if(NOT TARGET hangwatch_layer_${name}_public)
    hangwatch_layer_trees(${folder})
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_link_libraries(${target} INTERFACE hangwatch_layer_${name}_public)
  elseif(type STREQUAL "EXECUTABLE" OR type STREQUAL "OBJECT_LIBRARY")
    target_link_libraries(${target} PRIVATE hangwatch_layer_${name}_private)
  else()
    target_link_libraries(${target} PRIVATE hangwatch_layer_${name}_private
                                    PUBLIC hangwatch_layer_${name}_public)
  endif()
endfunction()

# Rooms: a folder split into subfolders that are libraries of their own (agent/core,
# agent/samplers, agent/sinks; hang/files, hang/model, hang/open_hang). Each room is a layer of
# its own: its library's sources see the room's private tree, and whatever links it sees the
# room's headers only, so one room's include of another room it does not link fails to compile.
#
# hangwatch_room(<target> <folder> [LINKS <library>...]): <target> is built from <folder>
# (hangwatch_layer) and links the <library>s publicly. Every <library> that is a room must be
# defined already, in the order of the rooms below it: a room may depend only on the rooms
# made before it, so no two rooms can depend on each other (static libraries would allow that
# cycle silently).
function(hangwatch_room target folder)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "LINKS")
  foreach(room ${arg_LINKS})
    if(room MATCHES "^hangwatch_" AND NOT TARGET ${room})
      message(FATAL_ERROR "${target} (${folder}) links ${room}, which is not made yet: a room "
                          "may depend only on the rooms below it, made before it")
    endif()
  endforeach()
  hangwatch_layer(${target} ${folder})
  target_link_libraries(${target} PUBLIC ${arg_LINKS})
endfunction()

# The installed API (include/hangwatch/): visible to every layer.
add_library(hangwatch_api_headers INTERFACE)
target_include_directories(hangwatch_api_headers INTERFACE
                           $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
