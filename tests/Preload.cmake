# libcoload_preload.so in front of a recording HIP runtime (docs/preload.md):
#   preload_hip_<release>  tests/support/preload_recording_hip.c under HIP's own names,
#                          libamdhip64.so.<release> in preload_hip/<release>/, one per release
#   preload_hip_kpack7     the same with KPACK_CAPABLE, linked to preload_fake_rocm_kpack (librocm_kpack.so.1)
#   preload_probe          tests/support/preload_probe.c: loads a runtime, then a HIP library
#   preload_static_program a statically linked program that marks that it ran (coload run --dry-run)
#   coload_preload_test    tests/preload_test.cpp, preload_run_test.cpp: the probe run under LD_PRELOAD
#                          (preload_probe_run.h), its bundles checked with comgr's lookup
# Not under sanitizers: an instrumented library cannot be preloaded into the
# uninstrumented probe. Included from tests/CMakeLists.txt after HipkImages.cmake.
if(COLOAD_SANITIZE)
  return()
endif()
set(COLOAD_PRELOAD_RELEASES 5.7.50700 6.2.60200 6.4.60400 7.0.70000)
foreach(release IN LISTS COLOAD_PRELOAD_RELEASES)
  string(REGEX MATCH "^[0-9]+" major ${release})
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" major_minor ${release})
  add_library(preload_hip_${major_minor} SHARED ${COLOAD_TEST_SUPPORT_DIR}/preload_recording_hip.c
                                                ${COLOAD_TEST_SUPPORT_DIR}/record_registrations.c)
  target_include_directories(preload_hip_${major_minor} PRIVATE ${COLOAD_TEST_SUPPORT_DIR})
  target_link_libraries(preload_hip_${major_minor} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(preload_hip_${major_minor} PROPERTIES C_STANDARD 11 OUTPUT_NAME amdhip64
    VERSION ${release} SOVERSION ${major} LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/preload_hip/${release})
endforeach()

# A wheel's HIP (torch/lib/libamdhip64.so): no version in the file name, SONAME libamdhip64.so.6.
add_library(preload_hip_wheel6 SHARED ${COLOAD_TEST_SUPPORT_DIR}/preload_recording_hip.c
                                      ${COLOAD_TEST_SUPPORT_DIR}/record_registrations.c)
target_include_directories(preload_hip_wheel6 PRIVATE ${COLOAD_TEST_SUPPORT_DIR})
target_link_libraries(preload_hip_wheel6 PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
target_link_options(preload_hip_wheel6 PRIVATE -Wl,-soname,libamdhip64.so.6)
set_target_properties(preload_hip_wheel6 PROPERTIES C_STANDARD 11 OUTPUT_NAME amdhip64 NO_SONAME ON
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/preload_hip/wheel6/torch/lib)

# A CLR built with rocm-kpack (TheRock's): HIP 7.1, linked to a librocm_kpack, accepting HIPK records.
add_library(preload_fake_rocm_kpack SHARED ${COLOAD_TEST_SUPPORT_DIR}/fake_rocm_kpack.c)
set_target_properties(preload_fake_rocm_kpack PROPERTIES C_STANDARD 11 OUTPUT_NAME rocm_kpack SOVERSION 1
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/preload_hip/kpack7)
add_library(preload_hip_kpack7 SHARED ${COLOAD_TEST_SUPPORT_DIR}/preload_recording_hip.c
                                      ${COLOAD_TEST_SUPPORT_DIR}/record_registrations.c)
target_include_directories(preload_hip_kpack7 PRIVATE ${COLOAD_TEST_SUPPORT_DIR})
target_compile_definitions(preload_hip_kpack7 PRIVATE KPACK_CAPABLE)
target_link_libraries(preload_hip_kpack7 PRIVATE preload_fake_rocm_kpack Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(preload_hip_kpack7 PROPERTIES C_STANDARD 11 OUTPUT_NAME amdhip64 VERSION 7.1.70100 SOVERSION 7
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/preload_hip/kpack7)

add_executable(preload_probe ${COLOAD_TEST_SUPPORT_DIR}/preload_probe.c)
target_link_libraries(preload_probe PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(preload_probe PROPERTIES C_STANDARD 11)

add_executable(preload_static_program ${COLOAD_TEST_SUPPORT_DIR}/preload_static_program.c)
target_link_options(preload_static_program PRIVATE -static)
set_target_properties(preload_static_program PROPERTIES C_STANDARD 11)

add_executable(coload_preload_test preload_test.cpp preload_run_test.cpp)
target_include_directories(coload_preload_test PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(coload_preload_test PRIVATE coload_static coload_bundle_writer GTest::gtest GTest::gtest_main
                                                  ${CMAKE_DL_LIBS})
target_compile_definitions(coload_preload_test PRIVATE
  COLOAD_PRELOAD_HIP_DIR="${CMAKE_CURRENT_BINARY_DIR}/preload_hip"
  COLOAD_FIXTURE_DIR="${COLOAD_FIXTURE_DIR}"
  COLOAD_PRELOAD_LIBRARY="$<TARGET_FILE:coload_preload_library>"
  COLOAD_PRELOAD_PROBE="$<TARGET_FILE:preload_probe>"
  COLOAD_STATIC_PROGRAM="$<TARGET_FILE:preload_static_program>"
  COLOAD_CLI="$<TARGET_FILE:coload_cli>"
  COLOAD_TEMPLATE_LIBRARY="$<TARGET_FILE:hip_templates>"
  COLOAD_HIPK_FIXTURE_DIR="${COLOAD_HIPK_FIXTURE_DIR}"
  COLOAD_PLUGIN_EMITS_GFX90A="$<TARGET_FILE:coload_plugin_emits_gfx90a>")
add_dependencies(coload_preload_test coload_preload_library coload_cli preload_probe preload_static_program hip_templates coload_fixtures
                 coload_hipk_fixtures coload_plugin_emits_gfx90a)
foreach(release IN LISTS COLOAD_PRELOAD_RELEASES)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" major_minor ${release})
  add_dependencies(coload_preload_test preload_hip_${major_minor})
endforeach()
add_dependencies(coload_preload_test preload_hip_wheel6 preload_hip_kpack7)
gtest_discover_tests(coload_preload_test DISCOVERY_TIMEOUT 60 PROPERTIES ENVIRONMENT "${COLOAD_TEST_ENVIRONMENT}")
