// `coload run --dry-run`'s report (coload/detail/preload_dry_run.h).
#include "coload/detail/preload_dry_run.h"

#include <filesystem>

#include "coload/fat_binary.h"
#include "preload/session.h"

namespace coload::preload {

Expected<std::string> dry_run_report(std::span<const std::string> files, const Config::Lookup& lookup) {
  HipRelease release;
  bool kpack = false;  // the program links rocm-kpack: taken as its HIP library's
  for (const std::string& file : files) {
    const std::string name = std::filesystem::path(file).filename().string();
    if (name.starts_with("libamdhip64.so")) release = release_of_file(file);
    kpack |= name.starts_with("librocm_kpack.so");
  }
  release.links_kpack = kpack;
  const SessionSettings settings = read_settings(lookup, release);
  if (!settings.inactive.empty()) return Error(ErrorKind::InvalidArgument, settings.inactive);
  std::string gpus;
  for (std::size_t i = 0; i < settings.devices.size(); ++i)
    gpus += (i ? ", " : "") + std::to_string(i) + " " + settings.devices[i].str();
  std::string report = "GPUs (" + settings.devices_from + "): " + gpus + "; " + release.name() +
                       (settings.plan.runtime_loads_kpack ? ", which loads kpack archives itself" : "") + "\n";
  for (const std::string& file : files) {
    auto binary = FatBinary::open(file, settings.plan.read);
    if (!binary) {
      // A library without HIP code is no finding; anything else is said.
      if (binary.error().kind() != ErrorKind::NotFound) report += file + ": " + binary.error().message() + "\n";
      continue;
    }
    for (std::size_t i = 0; i < binary->bundles().size(); ++i)
      report += Session::describe(file, i, plan_bundle(*binary, i, settings.plan), settings.devices);
  }
  return report;
}

}  // namespace coload::preload
