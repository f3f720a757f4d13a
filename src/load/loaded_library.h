// load/loaded_library.h: a runtime library this process already has loaded,
// found by its SONAME family whatever its exact name (libamdhip64.so.7,
// libhsa-runtime64.so.1, a wheel's torch/lib/libhsa-runtime64.so), so that
// coload adopts the instance the application runs instead of opening a
// second one (docs/loading.md, "Which library"). Internal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace coload::detail {

/// A loaded object of a family: the path the dynamic loader holds it by (for
/// dlopen with RTLD_NOLOAD) and the name that placed it in the family.
struct LoadedLibrary {
  std::string path;
  std::string name;          ///< its SONAME, else its file name
  std::optional<int> major;  ///< the first number after ".so.", when the name has one
  bool soname = false;       ///< `name` is its SONAME
};

/// The first object dl_iterate_phdr lists whose SONAME (or, without one, its
/// file name) is `family` ("libamdhip64.so") or `family` + "." + a number
/// ("libamdhip64.so.7", "libamdhip64.so.6.2.41133"); nullopt when none is.
/// Reads only the loader's own records of loaded objects.
std::optional<LoadedLibrary> find_loaded_library(std::string_view family);

/// The loaded object a dlopen handle stands for, named as find_loaded_library
/// names it (its SONAME, else its file name); nullopt when the loader cannot tell.
std::optional<LoadedLibrary> loaded_library_of(void* handle);

/// The file name of `path`: what follows its last '/'.
std::string_view base_name(std::string_view path);

/// The SONAME family of a library name: its file name cut after ".so"
/// ("libamdhip64.so" for "/opt/rocm/lib/libamdhip64.so.6.2.41133"), or the
/// whole file name when it has no ".so" ending a word.
std::string family_of(std::string_view name);

/// The major in a library's name: 6 in "libamdhip64.so.6" and
/// "/opt/rocm/lib/libamdhip64.so.6.2.41133"; nullopt without a number after ".so.".
std::optional<int> major_in_name(std::string_view name);

}  // namespace coload::detail
