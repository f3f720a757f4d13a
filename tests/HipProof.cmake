# Real clang-22-built HIP programs whose HIP runtime is the example
# registration layer (examples/hip_layer), run with the dry-run runtime:
# hip_proof_app (two TUs with kernels of the same name, one plain and one
# compressed bundle, a device global), and hip_proof_dlopen loading and
# unloading HIP shared libraries (libhip_proof.so and the host fixtures,
# whose own HIP stand-ins the layer's symbols interpose) round after round.
# Code object v5, which HIP 5 loads (the test HIP library reports 5.2, as
# ROCm 5.2.3's does; clang-22's default v6 needs HIP 6.2+).
set(COLOAD_HIP_FLAGS -x hip -nogpulib -nogpuinc -O2 -fPIC -I${PROJECT_SOURCE_DIR}/tests/kernels
                     --offload-arch=gfx90a --offload-arch=gfx1100 -mcode-object-version=5)
set(COLOAD_PROOF_DIR ${CMAKE_CURRENT_BINARY_DIR}/hip_proof)
file(MAKE_DIRECTORY ${COLOAD_PROOF_DIR})
# Compiles tu_scale_a.hip and tu_scale_b.hip with COMPILER into objects
# <unit><SUFFIX>.o, listed in OUT: FLAGS for both, A_FLAGS / B_FLAGS for one.
function(coload_hip_proof_objects out suffix compiler)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "FLAGS;A_FLAGS;B_FLAGS")
  set(objects)
  set(units tu_scale_a tu_scale_b)
  set(unit_flags A_FLAGS B_FLAGS)
  foreach(unit flags IN ZIP_LISTS units unit_flags)
    set(object ${COLOAD_PROOF_DIR}/${unit}${suffix}.o)
    add_custom_command(OUTPUT ${object}
      COMMAND ${compiler} ${COLOAD_HIP_FLAGS} ${arg_FLAGS} ${arg_${flags}} -cuid=${unit} -c
              ${PROJECT_SOURCE_DIR}/tests/kernels/${unit}.hip -o ${object}
      DEPENDS ${PROJECT_SOURCE_DIR}/tests/kernels/${unit}.hip ${PROJECT_SOURCE_DIR}/tests/kernels/hip_min.h
      COMMENT "Compiling ${unit}.hip for gfx90a and gfx1100 with ${compiler}"
      VERBATIM)
    list(APPEND objects ${object})
  endforeach()
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(${out} ${objects} PARENT_SCOPE)
endfunction()

# TU a is embedded as a plain bundle, TU b as a compressed one.
coload_hip_proof_objects(COLOAD_PROOF_OBJECTS "" ${COLOAD_CLANG} B_FLAGS --offload-compress)

add_executable(hip_proof_app hip_proof_main.cpp ${COLOAD_PROOF_OBJECTS})
target_link_libraries(hip_proof_app PRIVATE coload_hip_layer)
# The same two TUs as a shared library: its HIP symbols resolve to the layer in the process.
add_library(hip_proof SHARED ${COLOAD_PROOF_OBJECTS})
set_target_properties(hip_proof PROPERTIES LINKER_LANGUAGE CXX)
add_executable(hip_proof_dlopen hip_proof_dlopen.c)
target_link_libraries(hip_proof_dlopen PRIVATE coload_hip_layer ${CMAKE_DL_LIBS})
add_dependencies(hip_proof_dlopen hip_proof)

foreach(device IN ITEMS gfx90a gfx1100)
  add_test(NAME hip_proof_app_${device} COMMAND hip_proof_app)
  set_tests_properties(hip_proof_app_${device} PROPERTIES
    ENVIRONMENT "HIP_LAYER_RUNTIME=dry-run;HIP_LAYER_DEVICES=${device};${COLOAD_TEST_ENVIRONMENT}"
    PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
endforeach()
# The same program with the test HSA and HIP libraries as the runtime: the
# call sequences a GPU would see, with real handles.
add_test(NAME hip_proof_app_hsa COMMAND hip_proof_app)
set_tests_properties(hip_proof_app_hsa PROPERTIES
  ENVIRONMENT "HIP_LAYER_RUNTIME=hsa;HIP_LAYER_LIBRARY=$<TARGET_FILE:coload_test_hsa>;COLOAD_TEST_HSA_SCRIPT=gpu gfx90a:sramecc+:xnack- lds=65536;${COLOAD_TEST_ENVIRONMENT}"
  PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
add_test(NAME hip_proof_app_hip COMMAND hip_proof_app)
set_tests_properties(hip_proof_app_hip PROPERTIES
  ENVIRONMENT "HIP_LAYER_RUNTIME=hip;HIP_LAYER_LIBRARY=$<TARGET_FILE:coload_test_hip>;COLOAD_TEST_HIP_DEVICES=gfx1100/65536/32;${COLOAD_TEST_ENVIRONMENT}"
  PASS_REGULAR_EXPRESSION "all checks passed" FAIL_REGULAR_EXPRESSION "FAILED")
set(COLOAD_PROOF_ENVIRONMENT "HIP_LAYER_RUNTIME=dry-run;HIP_LAYER_DEVICES=gfx90a;${COLOAD_TEST_ENVIRONMENT}")
add_test(NAME hip_proof_dlopen_app_library COMMAND hip_proof_dlopen 20 $<TARGET_FILE:hip_proof> 2)
# The fixtures' launchers: vector_ops has gfx90a code, lds_static none (98,
# hipErrorInvalidDeviceFunction), lds_dynamic only gfx90a:xnack+ (98 on xnack-).
foreach(library IN ITEMS libkernels.so libkernels_compressed.so libkernels_mixed.so)
  add_test(NAME hip_proof_dlopen_${library}
    COMMAND hip_proof_dlopen 10 ${COLOAD_FIXTURE_DIR}/host/${library} 3 vector_ops_launch=0 lds_static_launch=98
            lds_dynamic_launch=98)
endforeach()
# The same libraries with the test HSA library as the runtime (one gfx90a
# agent; their code objects are v6, which the test ROCr, versioned as 6.2's,
# loads). The test HIP library reports HIP 5.2, which loads v4 and v5 only.
foreach(library IN ITEMS libkernels.so libkernels_compressed.so libkernels_mixed.so)
  add_test(NAME hip_proof_dlopen_hsa_${library}
    COMMAND hip_proof_dlopen 3 ${COLOAD_FIXTURE_DIR}/host/${library} 3 vector_ops_launch=0 lds_static_launch=98
            lds_dynamic_launch=98)
  set_tests_properties(hip_proof_dlopen_hsa_${library} PROPERTIES
    ENVIRONMENT "HIP_LAYER_RUNTIME=hsa;HIP_LAYER_LIBRARY=$<TARGET_FILE:coload_test_hsa>;COLOAD_TEST_HSA_SCRIPT=gpu gfx90a:sramecc+:xnack- lds=65536;${COLOAD_TEST_ENVIRONMENT}"
    PASS_REGULAR_EXPRESSION "all checks passed")
endforeach()
set_tests_properties(hip_proof_dlopen_app_library hip_proof_dlopen_libkernels.so
  hip_proof_dlopen_libkernels_compressed.so hip_proof_dlopen_libkernels_mixed.so PROPERTIES
  ENVIRONMENT "${COLOAD_PROOF_ENVIRONMENT}" PASS_REGULAR_EXPRESSION "all checks passed")

# Launches from eight threads while a ninth loads and unloads libhip_proof.so
# (scripts/test.sh also runs it under TSan).
add_executable(hip_proof_threads hip_proof_threads.c ${COLOAD_PROOF_OBJECTS})
target_link_libraries(hip_proof_threads PRIVATE coload_hip_layer Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(hip_proof_threads PROPERTIES LINKER_LANGUAGE CXX)
add_dependencies(hip_proof_threads hip_proof)
add_test(NAME hip_proof_threads COMMAND hip_proof_threads $<TARGET_FILE:hip_proof> 50)
set_tests_properties(hip_proof_threads PROPERTIES ENVIRONMENT "${COLOAD_PROOF_ENVIRONMENT}"
                     PASS_REGULAR_EXPRESSION "all checks passed" TIMEOUT 300)

# The same library with its bundles written as CCOB v2, by clang-19 (whose
# --offload-compress writes v2; LLVM 22's lld does its device link, as in
# tests/fixtures/build_fixtures.sh), loaded and unloaded through the layer.
if(COLOAD_CLANG19 AND COLOAD_LLD)
  set(COLOAD_PROOF_LLD19 ${COLOAD_PROOF_DIR}/lld19)
  file(MAKE_DIRECTORY ${COLOAD_PROOF_LLD19})
  file(CREATE_LINK ${COLOAD_LLD} ${COLOAD_PROOF_LLD19}/lld SYMBOLIC)
  coload_hip_proof_objects(COLOAD_PROOF_V2_OBJECTS _v2 ${COLOAD_CLANG19} FLAGS --offload-compress -B${COLOAD_PROOF_LLD19})
  add_library(hip_proof_v2 SHARED ${COLOAD_PROOF_V2_OBJECTS})
  set_target_properties(hip_proof_v2 PROPERTIES LINKER_LANGUAGE CXX)
  add_dependencies(hip_proof_dlopen hip_proof_v2)
  add_test(NAME hip_proof_v2_is_ccob_v2 COMMAND coload_cli ls $<TARGET_FILE:hip_proof_v2>)
  set_tests_properties(hip_proof_v2_is_ccob_v2 PROPERTIES PASS_REGULAR_EXPRESSION "bundle 1: .* ccob v2 zstd")
  add_test(NAME hip_proof_dlopen_ccob_v2
    COMMAND hip_proof_dlopen 10 $<TARGET_FILE:hip_proof_v2> 2 launch_scale_a_c=0 launch_scale_b_c=0)
  set_tests_properties(hip_proof_dlopen_ccob_v2 PROPERTIES ENVIRONMENT "${COLOAD_PROOF_ENVIRONMENT}"
                       PASS_REGULAR_EXPRESSION "all checks passed")
endif()
