// target/isa_name.h: the prefix of an AMDGPU ISA name, the form HSA agents,
// comgr and a code object's amdhsa.target write a target in
// ("amdgcn-amd-amdhsa--gfx90a:xnack-"). Internal.
#pragma once

#include <string_view>

namespace coload::detail {

/// "amdgcn-amd-amdhsa--": what stands before the target ID in an ISA name.
inline constexpr std::string_view kIsaNamePrefix = "amdgcn-amd-amdhsa--";

}  // namespace coload::detail
