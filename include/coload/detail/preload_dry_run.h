// Unstable (coload/detail): may change in any release. What `coload run
// --dry-run` prints: the preload's plan (docs/preload.md) for every wrapper
// of a program's files, without running it.
#pragma once

#include <span>
#include <string>

#include "coload/config.h"
#include "coload/error.h"

namespace coload::preload {

/// The report of every wrapper of `files` (a program and the libraries it
/// links; files without HIP code are left out) on the GPUs the environment
/// `lookup` gives (COLOAD_DEVICES, else the KFD topology), with the HIP
/// release of the `libamdhip64.so*` among `files`: a header line naming the
/// GPUs and the release, then one line per wrapper and GPU, as the preload
/// would decide ("the runtime finds ...", "<tier> ... as ...", "no code
/// object: ..."). Errors: InvalidArgument when no GPU is known or a setting
/// is bad (the preload would pass everything on).
Expected<std::string> dry_run_report(std::span<const std::string> files, const Config::Lookup& lookup);

}  // namespace coload::preload
