// Internal: the registration functions of the built-in hotswap passes, one per
// line of passes.def. Each adds exactly one pass, under the name its line
// gives, to the registry it is handed; HotswapRegistry::builtin() calls them
// in list order once per process. Declared from the list, so a listed pass
// whose source file is missing is an undefined symbol at link time.
#pragma once

#include <string_view>

#include "coload/detail/hotswap.h"

namespace coload::detail {

#define COLOAD_HOTSWAP_PASS(Name, pass_name) void register_##Name##_pass(HotswapRegistry& registry);
#include "hotswap/passes.def"
#undef COLOAD_HOTSWAP_PASS

/// The pass names of passes.def, in list order.
inline constexpr std::string_view kBuiltinPassNames[] = {
#define COLOAD_HOTSWAP_PASS(Name, pass_name) pass_name,
#include "hotswap/passes.def"
#undef COLOAD_HOTSWAP_PASS
};

}  // namespace coload::detail
