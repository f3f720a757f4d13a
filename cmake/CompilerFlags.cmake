# Warnings and sanitizers for every target of the project.
add_compile_options(-Wall -Wextra -Wpedantic -Wno-unused-parameter)
if(COLOAD_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(COLOAD_BUILD_FUZZERS)
  # Coverage instrumentation for the library too, so libFuzzer sees inside it.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
