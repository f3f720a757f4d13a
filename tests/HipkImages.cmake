# kpack'd (HIPK) host images made from the clang-built host fixtures as
# TheRock's packer (rocm-kpack) makes them, by test-side code only
# (docs/fixtures.md, "kpack'd host images"):
#   kpack_split          tests/support/kpack_split.cpp: packs a host ELF into an install
#                        tree (HIPK wrappers, .rocm_kpack_ref in a new PT_LOAD, NOBITS
#                        .hip_fatbin) and writes its per-target archives (kpack_writer)
#   hipk_record          tests/support/hipk_record.c: dlopens a library with its
#                        registrations recorded and prints the wrappers it registered
#   hipk_recording_hip   tests/support/hipk_recording_hip.c: the same for executables
#                        linked against it, printed at exit
#   coload_hipk_fixtures runs tests/fixtures/hipk_fixtures.sh into ${COLOAD_HIPK_FIXTURE_DIR}
#                        (always this build's: the trees depend on kpack_split)
#   test hipk_images     tests/hipk_images_test.sh: the trees against their originals,
#                        through llvm-readelf, clang-offload-bundler and zstd
# Included from tests/CMakeLists.txt after HipTemplates.cmake (libhip_templates.so,
# 104 wrappers, is one of the packed cases).
add_executable(kpack_split ${COLOAD_TEST_SUPPORT_DIR}/kpack_split.cpp)
target_link_libraries(kpack_split PRIVATE coload_kpack_writer PkgConfig::ZSTD ZLIB::ZLIB)

add_executable(hipk_record ${COLOAD_TEST_SUPPORT_DIR}/hipk_record.c)
target_link_libraries(hipk_record PRIVATE coload_record_registrations ${CMAKE_DL_LIBS})
set_target_properties(hipk_record PROPERTIES ENABLE_EXPORTS ON C_STANDARD 11)

# What a kpack'd executable registers, printed at its exit (the mixed-target executables link it).
# Never instrumented: the fixture script links plain executables against it.
add_library(hipk_recording_hip SHARED ${COLOAD_TEST_SUPPORT_DIR}/hipk_recording_hip.c
                                      ${COLOAD_TEST_SUPPORT_DIR}/record_registrations.c)
target_include_directories(hipk_recording_hip PRIVATE ${COLOAD_TEST_SUPPORT_DIR})
target_link_libraries(hipk_recording_hip PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(hipk_recording_hip PROPERTIES C_STANDARD 11)
if(COLOAD_SANITIZE)
  target_compile_options(hipk_recording_hip PRIVATE -fno-sanitize=all)
  target_link_options(hipk_recording_hip PRIVATE -fno-sanitize=all)
endif()

set(COLOAD_HIPK_FIXTURE_DIR ${CMAKE_BINARY_DIR}/hipk_fixtures CACHE INTERNAL "kpack'd host image fixtures")
if(COLOAD_HAVE_FIXTURES)
  set(_coload_hipk_script ${PROJECT_SOURCE_DIR}/tests/fixtures/hipk_fixtures.sh)
  add_custom_command(
    OUTPUT ${COLOAD_HIPK_FIXTURE_DIR}/cases.tsv
    COMMAND ${CMAKE_COMMAND} -E env CLANG=${COLOAD_CLANG}
      ${COLOAD_BASH} ${_coload_hipk_script} ${COLOAD_HIPK_FIXTURE_DIR} $<TARGET_FILE:kpack_split>
      ${COLOAD_FIXTURE_DIR} $<TARGET_FILE:hip_templates> $<TARGET_FILE:hipk_recording_hip>
    DEPENDS ${_coload_hipk_script} ${_coload_fixture_kernels} kpack_split hip_templates hipk_recording_hip
            coload_fixtures
            ${COLOAD_FIXTURE_DIR}/manifest.tsv
    COMMENT "Building kpack'd host image fixtures in ${COLOAD_HIPK_FIXTURE_DIR}"
    VERBATIM)
  add_custom_target(coload_hipk_fixtures ALL DEPENDS ${COLOAD_HIPK_FIXTURE_DIR}/cases.tsv)

  find_program(COLOAD_READELF NAMES llvm-readelf-22 llvm-readelf HINTS ${LLVM_TOOLS_BINARY_DIR})
  find_program(COLOAD_ZSTD_TOOL NAMES zstd)
  if(COLOAD_READELF AND COLOAD_ZSTD_TOOL)
    add_test(NAME hipk_images
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hipk_images_test.sh ${COLOAD_HIPK_FIXTURE_DIR}
              $<TARGET_FILE:hipk_record> ${COLOAD_READELF} ${COLOAD_BUNDLER})
    set_tests_properties(hipk_images PROPERTIES PASS_REGULAR_EXPRESSION "all checks passed"
                         FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 600)
  else()
    message(WARNING "llvm-readelf or zstd not found: test hipk_images disabled")
  endif()
endif()

# The library against the trees (tests/kpack_image_test.cpp, in coload_tests).
target_sources(coload_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/kpack_image_test.cpp)
target_compile_definitions(coload_tests PRIVATE COLOAD_HIPK_FIXTURE_DIR="${COLOAD_HIPK_FIXTURE_DIR}")
add_dependencies(coload_tests coload_hipk_fixtures)
# The C API's archive listing and extraction against the trees (tests/c_api_kpack_test.cpp).
target_sources(coload_c_api_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/c_api_kpack_test.cpp)
target_compile_definitions(coload_c_api_test PRIVATE COLOAD_HIPK_FIXTURE_DIR="${COLOAD_HIPK_FIXTURE_DIR}")
add_dependencies(coload_c_api_test coload_hipk_fixtures)
add_test(NAME kpack_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/kpack_cli_test.sh $<TARGET_FILE:coload_cli>
                                    ${COLOAD_HIPK_FIXTURE_DIR})
set_tests_properties(kpack_cli PROPERTIES PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
