# Warnings and sanitizers for every target of the project.
add_compile_options(-Wall -Wextra -Wpedantic -Wno-unused-parameter)
# Designated initializers that leave defaulted members out are the intended
# style for option structs (DeviceOverrides{.lds_bytes = …}).
add_compile_options($<$<CXX_COMPILER_ID:Clang>:-Wno-missing-designated-field-initializers>)
# COLOAD_SANITIZE=ON: ASan + UBSan; COLOAD_SANITIZE=thread: ThreadSanitizer.
if(COLOAD_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(COLOAD_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(COLOAD_BUILD_FUZZERS)
  # Coverage instrumentation for the library too, so libFuzzer sees inside it.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
