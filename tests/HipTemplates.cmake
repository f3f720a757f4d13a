# A template-heavy HIP library in the shape of rocPRIM/hipCUB users
# (docs/fixtures.md, "Template library"): tests/kernels/templates/tpl_unit.hip
# compiled as COLOAD_TEMPLATE_UNITS translation units (-DTPL_TU=<n>), each its
# own __hip_fatbin_wrapper, in four groups of --offload-arch lists so the
# best-fitting code for a shared template stub differs per device, linked
# into one shared library, libhip_templates.so (target hip_templates, also
# what bench/ registers). hip_templates_app dlopens it through the example
# layer (dry-run) for each device of a list and checks every launch.
set(COLOAD_TEMPLATE_UNITS 104)
# The objects are the toolchain's: with COLOAD_FIXTURES_FROM (cmake/Fixtures.cmake) that tree's.
if(COLOAD_FIXTURES_FROM)
  set(COLOAD_TEMPLATE_DIR ${COLOAD_FIXTURES_FROM}/tests/hip_templates)
else()
  set(COLOAD_TEMPLATE_DIR ${CMAKE_CURRENT_BINARY_DIR}/hip_templates)
  file(MAKE_DIRECTORY ${COLOAD_TEMPLATE_DIR})
endif()
# Unit n is in group n % 4 (tests/hip_templates_main.cpp, kGroups, says the same):
#   0  generic: gfx9-4-generic, gfx11-generic, gfx10-3-generic (code object v6; every other unit compressed)
#   1  gfx90a (xnack any), gfx942 (code object v5, plain)
#   2  gfx90a:xnack+, gfx1100 (v5, compressed)
#   3  gfx942, gfx1100, gfx1030 (v5, plain)
set(COLOAD_TEMPLATE_GROUP_0 --offload-arch=gfx9-4-generic --offload-arch=gfx11-generic
                            --offload-arch=gfx10-3-generic -mcode-object-version=6)
set(COLOAD_TEMPLATE_GROUP_1 --offload-arch=gfx90a --offload-arch=gfx942 -mcode-object-version=5)
set(COLOAD_TEMPLATE_GROUP_2 --offload-arch=gfx90a:xnack+ --offload-arch=gfx1100 -mcode-object-version=5
                            --offload-compress)
set(COLOAD_TEMPLATE_GROUP_3 --offload-arch=gfx942 --offload-arch=gfx1100 --offload-arch=gfx1030
                            -mcode-object-version=5)
set(COLOAD_TEMPLATE_SOURCE ${PROJECT_SOURCE_DIR}/tests/kernels/templates/tpl_unit.hip)
set(COLOAD_TEMPLATE_DEPENDS ${COLOAD_TEMPLATE_SOURCE} ${PROJECT_SOURCE_DIR}/tests/kernels/templates/tpl_kernels.h
                            ${PROJECT_SOURCE_DIR}/tests/kernels/hip_min.h)
set(COLOAD_TEMPLATE_OBJECTS)
math(EXPR last_unit "${COLOAD_TEMPLATE_UNITS} - 1")
foreach(unit RANGE ${last_unit})
  math(EXPR group "${unit} % 4")
  math(EXPR eighth "${unit} % 8")
  set(flags ${COLOAD_TEMPLATE_GROUP_${group}})
  if(eighth EQUAL 0)
    list(APPEND flags --offload-compress)
  endif()
  set(object ${COLOAD_TEMPLATE_DIR}/tpl_unit_${unit}.o)
  list(APPEND COLOAD_TEMPLATE_OBJECTS ${object})
  if(COLOAD_FIXTURES_FROM)
    continue()
  endif()
  # -O1 keeps the 104 compilations to about a minute on two cores; ccache (when configured) caches them.
  add_custom_command(OUTPUT ${object}
    COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${COLOAD_CLANG} -x hip -nogpulib -nogpuinc -O1 -fPIC
            -I${PROJECT_SOURCE_DIR}/tests/kernels -I${PROJECT_SOURCE_DIR}/tests/kernels/templates
            -DTPL_TU=${unit} ${flags} -cuid=tpl_unit_${unit} -c ${COLOAD_TEMPLATE_SOURCE} -o ${object}
    DEPENDS ${COLOAD_TEMPLATE_DEPENDS}
    COMMENT "Compiling template unit ${unit} (group ${group})"
    VERBATIM)
endforeach()
set_source_files_properties(${COLOAD_TEMPLATE_OBJECTS} PROPERTIES EXTERNAL_OBJECT TRUE)
if(NOT COLOAD_FIXTURES_FROM)
  set_source_files_properties(${COLOAD_TEMPLATE_OBJECTS} PROPERTIES GENERATED TRUE)
endif()
add_library(hip_templates SHARED ${COLOAD_TEMPLATE_OBJECTS})
set_target_properties(hip_templates PROPERTIES LINKER_LANGUAGE CXX)

# Definitions of the registration entry points that record every call (and
# pass it on to the layer): tests/support/record_registrations.h.
add_library(coload_record_registrations OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/support/record_registrations.c)
target_include_directories(coload_record_registrations PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/support)
target_link_libraries(coload_record_registrations PUBLIC Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(coload_record_registrations PROPERTIES C_STANDARD 11 POSITION_INDEPENDENT_CODE ON)

add_executable(hip_templates_app hip_templates_main.cpp)
# The shim's definitions must come before the layer's in the global scope: exported from the executable.
target_link_libraries(hip_templates_app PRIVATE coload_record_registrations coload_hip_layer ${CMAKE_DL_LIBS})
set_target_properties(hip_templates_app PROPERTIES ENABLE_EXPORTS ON)
add_dependencies(hip_templates_app hip_templates)

# label = what tests/hip_templates_main.cpp knows the device as; spec = HIP_LAYER_DEVICES.
set(COLOAD_TEMPLATE_DEVICES
  "gfx90a-xnack-off=gfx90a:sramecc+:xnack-" "gfx90a-xnack-on=gfx90a:sramecc+:xnack+" "gfx942=gfx942"
  "gfx950=gfx950" "gfx1100=gfx1100" "gfx1101=gfx1101" "gfx1030=gfx1030" "gfx1031=gfx1031"
  "gfx1031-extended=gfx1031")
foreach(entry IN LISTS COLOAD_TEMPLATE_DEVICES)
  string(REPLACE "=" ";" entry "${entry}")
  list(GET entry 0 label)
  list(GET entry 1 spec)
  set(environment "HIP_LAYER_RUNTIME=dry-run;HIP_LAYER_DEVICES=${spec};${COLOAD_TEST_ENVIRONMENT}")
  if(label STREQUAL "gfx1031-extended")
    list(APPEND environment COLOAD_EXTENDED_ISA_COMPAT=all)
  endif()
  add_test(NAME hip_templates_${label} COMMAND hip_templates_app $<TARGET_FILE:hip_templates> ${label})
  set_tests_properties(hip_templates_${label} PROPERTIES ENVIRONMENT "${environment}"
                       PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
endforeach()
# The same through the test HSA library (ROCr's call sequence, a kernel
# object per unit): gfx90a, whose code is group 1's (v5). Generic code
# objects are not run there: coload takes the test ROCr, versioned 1.14, for
# one that loads none.
add_test(NAME hip_templates_hsa_gfx90a-xnack-off
  COMMAND hip_templates_app $<TARGET_FILE:hip_templates> gfx90a-xnack-off)
set_tests_properties(hip_templates_hsa_gfx90a-xnack-off PROPERTIES
  ENVIRONMENT "HIP_LAYER_RUNTIME=hsa;HIP_LAYER_LIBRARY=$<TARGET_FILE:coload_test_hsa>;COLOAD_TEST_HSA_SCRIPT=gpu gfx90a:sramecc+:xnack- lds=65536;${COLOAD_TEST_ENVIRONMENT}"
  PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
add_dependencies(hip_templates_app coload_test_hsa)

# The same registrations recorded with no HIP runtime (RECORD_ONLY) and
# replayed into a dry-run registry, as bench/ does: every wrapper and
# function accepted; of the 116 distinct stubs (104 units' own kernels and
# 12 shared templates), those with code for the device resolve.
add_executable(hip_templates_replay hip_templates_replay.c)
target_link_libraries(hip_templates_replay PRIVATE coload_record_registrations coload ${CMAKE_DL_LIBS})
set_target_properties(hip_templates_replay PROPERTIES ENABLE_EXPORTS ON C_STANDARD 11)
add_dependencies(hip_templates_replay hip_templates)
foreach(case IN ITEMS "gfx942;90;26" "gfx1101;38;78")
  list(GET case 0 device)
  add_test(NAME hip_templates_replay_${device} COMMAND hip_templates_replay $<TARGET_FILE:hip_templates> ${case})
  set_tests_properties(hip_templates_replay_${device} PROPERTIES ENVIRONMENT "${COLOAD_TEST_ENVIRONMENT}"
                       PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
endforeach()

# The wrappers are found without running a constructor: coload's host-image
# reader follows .hipFatBinSegment's relocations to the 104 bundles.
add_test(NAME hip_templates_wrappers_listed COMMAND coload_cli ls $<TARGET_FILE:hip_templates>)
set_tests_properties(hip_templates_wrappers_listed PROPERTIES
  PASS_REGULAR_EXPRESSION "host_image, 104 bundles in \\.hip_fatbin at [^\n]* from wrappers")
