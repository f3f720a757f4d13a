# The library's folders as layers (docs/architecture.md, "Layers").
#
# coload_layer(NAME SOURCES ... [HEADERS public headers it owns]
#              [USES lower layers] [LINK external targets])
# makes the object library coload_NAME from src/NAME/. Its sources compile
# against a view (build/src/layers/NAME/) holding only the folders of NAME and
# of the layers it reaches (USES, transitively) and the public headers those
# layers own, so an include that reaches up fails to compile. USES may name
# only layers declared before, so the layers form no circle.
#
# coload_layer_check() adds the build step that fails when an object calls
# into a layer its own does not reach (scripts/check_layers.py, over nm).
find_program(COLOAD_PYTHON3 python3)

set_property(GLOBAL PROPERTY COLOAD_LAYERS "")
set(COLOAD_LAYER_MANIFEST ${PROJECT_BINARY_DIR}/src/layers.txt)
file(WRITE ${COLOAD_LAYER_MANIFEST}
  "# reach LAYER LAYERS-IT-MAY-USE... / owns LAYER PUBLIC-HEADERS... (cmake/CodeLayers.cmake)\n")

# A public header's name as code includes it after "coload/": its path
# under include/coload/ ("detail/ordered_pool.h"), or a generated one's file name.
function(coload_header_name header out)
  if(header MATCHES "^${PROJECT_SOURCE_DIR}/include/coload/")
    file(RELATIVE_PATH name ${PROJECT_SOURCE_DIR}/include/coload ${header})
  else()
    get_filename_component(name ${header} NAME)
  endif()
  set(${out} ${name} PARENT_SCOPE)
endfunction()

function(coload_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;HEADERS;USES;LINK")
  get_property(declared GLOBAL PROPERTY COLOAD_LAYERS)
  set(reach ${name})
  foreach(used IN LISTS arg_USES)
    if(NOT used IN_LIST declared)
      message(FATAL_ERROR "layer ${name} uses ${used}, which is not declared below it")
    endif()
    get_property(used_reach GLOBAL PROPERTY COLOAD_LAYER_REACH_${used})
    list(APPEND reach ${used_reach})
  endforeach()
  list(REMOVE_DUPLICATES reach)
  set_property(GLOBAL PROPERTY COLOAD_LAYER_REACH_${name} ${reach})
  set_property(GLOBAL PROPERTY COLOAD_LAYER_HEADERS_${name} ${arg_HEADERS})
  set_property(GLOBAL APPEND PROPERTY COLOAD_LAYERS ${name})

  set(view ${PROJECT_BINARY_DIR}/src/layers/${name})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view}/coload)
  foreach(layer IN LISTS reach)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${view}/${layer} SYMBOLIC)
    get_property(headers GLOBAL PROPERTY COLOAD_LAYER_HEADERS_${layer})
    foreach(header IN LISTS headers)
      coload_header_name(${header} header_name)
      get_filename_component(header_dir ${view}/coload/${header_name} DIRECTORY)
      file(MAKE_DIRECTORY ${header_dir})
      file(CREATE_LINK ${header} ${view}/coload/${header_name} SYMBOLIC)
    endforeach()
  endforeach()
  list(JOIN reach " " reach_text)
  set(owned)
  foreach(header IN LISTS arg_HEADERS)
    coload_header_name(${header} header_name)
    list(APPEND owned ${header_name})
  endforeach()
  list(JOIN owned " " owned_text)
  file(APPEND ${COLOAD_LAYER_MANIFEST} "reach ${name} ${reach_text}\nowns ${name} ${owned_text}\n")

  add_library(coload_${name} OBJECT ${arg_SOURCES})
  target_include_directories(coload_${name} PRIVATE ${view})
  # Debug information and __FILE__ name the real files, not the view's links:
  # abidw tells coload.h's types by their header's path (scripts/abi.sh).
  target_compile_options(coload_${name} PRIVATE "-ffile-prefix-map=${view}/coload/=${PROJECT_SOURCE_DIR}/include/coload/")
  foreach(layer IN LISTS reach)
    target_compile_options(coload_${name} PRIVATE "-ffile-prefix-map=${view}/${layer}/=${PROJECT_SOURCE_DIR}/src/${layer}/")
  endforeach()
  target_link_libraries(coload_${name} PRIVATE ${arg_LINK})
  target_compile_definitions(coload_${name} PRIVATE COLOAD_BUILDING_LIBRARY)
endfunction()

function(coload_layer_check)
  if(NOT COLOAD_PYTHON3)
    message(STATUS "python3 not found: the build does not check calls between layers")
    return()
  endif()
  get_property(layers GLOBAL PROPERTY COLOAD_LAYERS)
  set(arguments)
  set(objects)
  foreach(layer IN LISTS layers)
    list(APPEND arguments "${layer}=$<JOIN:$<TARGET_OBJECTS:coload_${layer}>,,>")
    list(APPEND objects $<TARGET_OBJECTS:coload_${layer}>)
  endforeach()
  set(stamp ${PROJECT_BINARY_DIR}/src/layers.checked)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${COLOAD_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py calls --nm ${CMAKE_NM}
            --manifest ${COLOAD_LAYER_MANIFEST} ${arguments}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${objects} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py ${COLOAD_LAYER_MANIFEST}
    COMMENT "Checking that no layer calls into one above it" VERBATIM)
  add_custom_target(coload_layer_check ALL DEPENDS ${stamp})
endfunction()
