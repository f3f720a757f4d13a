// Internal: the Unbundler::Comgr path of select_in_bundle with the comgr
// library named, so tests can point it at a missing or foreign library.
#pragma once

#include <string_view>

#include "coload/bundle.h"
#include "coload/device.h"
#include "coload/select.h"

namespace coload::detail {

/// select_in_bundle with Unbundler::Comgr, loading comgr from `library`.
/// Same errors as select_in_bundle.
Expected<Selection> select_with_comgr(const Device& device, const Bundle& bundle, const SelectOptions& options,
                                      std::string_view library);

/// The ISA name comgr is asked for when `device` falls back to its generic:
/// "amdgcn-amd-amdhsa--" + the generic with only the features the generic
/// supports (gfx906:sramecc+:xnack- → gfx9-generic:xnack-). Empty when the
/// processor has no generic family.
std::string generic_isa_name(const Device& device);

}  // namespace coload::detail
