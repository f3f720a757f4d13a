// The hotswap pass registry (coload/detail/hotswap.h): passes by name and by pair,
// the built-in passes of passes.def bound once per process, and the registry
// a Config asks for (built-ins, the plugin, COLOAD_HOTSWAP_PAIRS checked).
// Plugins are loaded in plugin.cpp.
#include <algorithm>
#include <mutex>
#include <string>

#include "coload/config.h"
#include "coload/detail/hotswap.h"
#include "common/try.h"
#include "hotswap/passes.h"

namespace coload {
namespace {

/// The canonical name of a processor, or the text itself when unknown.
std::string_view canonical(std::string_view name) {
  const Processor* processor = find_processor(name);
  return processor ? processor->name : name;
}

}  // namespace

const HotswapRegistry& HotswapRegistry::builtin() {
  // A function-local static is initialised once, thread-safely; each listed
  // registration function runs exactly once per process.
  static const HotswapRegistry registry = [] {
    HotswapRegistry built;
#define COLOAD_HOTSWAP_PASS(Name, pass_name) detail::register_##Name##_pass(built);
#include "hotswap/passes.def"
#undef COLOAD_HOTSWAP_PASS
    return built;
  }();
  return registry;
}

Expected<void> HotswapRegistry::add(HotswapPass pass) {
  if (pass.name.empty()) return Error(ErrorKind::InvalidArgument, "hotswap pass: empty name");
  const std::string where = "hotswap pass \"" + pass.name + "\"";
  if (pass.pairs.empty()) return Error(ErrorKind::InvalidArgument, where + ": no (source -> device) pairs");
  if (!pass.transform) return Error(ErrorKind::InvalidArgument, where + ": no transform");
  if (find(pass.name)) return Error(ErrorKind::InvalidArgument, where + ": a pass of that name is already registered");
  // Validate and canonicalise the pairs through the allowlist's own rules.
  HotswapAllowlist own;
  for (std::size_t i = 0; i < pass.pairs.size(); ++i) {
    const HotswapAllowlist::Pair& pair = pass.pairs[i];
    if (auto added = own.add(pair.source, pair.device); !added) {
      return std::move(added).error().with_context(where + ": pair " + std::to_string(i));
    }
  }
  for (const HotswapAllowlist::Pair& pair : own.pairs()) {
    if (const HotswapPass* other = find_pair(pair.source, pair.device)) {
      return Error(ErrorKind::Ambiguous, where + ": pair " + pair.source + " -> " + pair.device +
                                             " is already covered by pass \"" + other->name + "\"");
    }
  }
  pass.pairs.assign(own.pairs().begin(), own.pairs().end());
  passes_.push_back(std::make_unique<HotswapPass>(std::move(pass)));
  return {};
}

const HotswapPass* HotswapRegistry::find(std::string_view name) const {
  for (const auto& pass : passes_) {
    if (pass->name == name) return pass.get();
  }
  return nullptr;
}

const HotswapPass* HotswapRegistry::find_pair(std::string_view source, std::string_view device) const {
  const HotswapAllowlist::Pair wanted{std::string(canonical(source)), std::string(canonical(device))};
  for (const auto& pass : passes_) {
    if (std::find(pass->pairs.begin(), pass->pairs.end(), wanted) != pass->pairs.end()) return pass.get();
  }
  return nullptr;
}

HotswapAllowlist HotswapRegistry::allowlist() const {
  HotswapAllowlist allowlist;
  for (const auto& pass : passes_) {
    for (const HotswapAllowlist::Pair& pair : pass->pairs) {
      // Validated by add(); a refusal here would be a bug in add().
      [[maybe_unused]] Expected<void> added = allowlist.add(pair.source, pair.device);
    }
  }
  return allowlist;
}

Expected<HotswapRegistry> hotswap_registry(const Config& config) {
  HotswapRegistry registry;
  for (const auto& pass : HotswapRegistry::builtin().passes()) {
    COLOAD_RETURN_IF_ERROR(registry.add(*pass));
  }
  if (!config.hotswap_plugin.empty()) {
    if (auto added = registry.add_plugin(config.hotswap_plugin); !added) {
      return std::move(added).error().with_context("COLOAD_HOTSWAP_PLUGIN");
    }
  }
  // Narrowing to a pair no pass is validated for would silently do nothing.
  for (const std::string& item : config.hotswap_pairs) {
    std::size_t arrow = item.find('>');
    std::string_view text(item);
    if (arrow == std::string::npos || !registry.find_pair(text.substr(0, arrow), text.substr(arrow + 1))) {
      std::string passes;
      for (const auto& pass : registry.passes()) passes += (passes.empty() ? "" : ", ") + pass->name;
      return Error(ErrorKind::NotFound, "COLOAD_HOTSWAP_PAIRS: no registered hotswap pass is validated for " + item +
                                            " (passes: " + (passes.empty() ? "none" : passes) + ")");
    }
  }
  return registry;
}

SelectOptions select_options(const Config& config) {
  // Building the builtin registry validates every pass's pairs: not for nothing.
  if (!config.hotswap) return SelectOptions{.unbundler = config.unbundler, .hotswap = false};
  return select_options(config, HotswapRegistry::builtin());
}

SelectOptions select_options(const Config& config, const HotswapRegistry& registry) {
  SelectOptions options;
  options.unbundler = config.unbundler;
  options.hotswap = config.hotswap;
  if (!config.hotswap) return options;
  HotswapAllowlist all = registry.allowlist();
  for (const HotswapAllowlist::Pair& pair : all.pairs()) {
    bool listed =
        config.hotswap_pairs.empty() || std::find(config.hotswap_pairs.begin(), config.hotswap_pairs.end(),
                                                  pair.source + ">" + pair.device) != config.hotswap_pairs.end();
    if (!listed) continue;
    // Validated by the registry already; add() cannot refuse them.
    [[maybe_unused]] Expected<void> added = options.hotswap_allowlist.add(pair.source, pair.device);
  }
  return options;
}

Expected<HotswapOutput> run_hotswap_pass(const HotswapRegistry& passes, std::span<const std::byte> source,
                                         const Processor* from, const Device& device) {
  const std::string target = device.str();
  const Processor* to = device.target.processor;
  if (!from || !to) {
    return Error(ErrorKind::InvalidArgument, "device " + target + ": no known processor to transform between");
  }
  const HotswapPass* pass = passes.find_pair(from->name, to->name);
  if (!pass) {
    return Error(ErrorKind::NotFound, "no hotswap pass is registered for " + std::string(from->name) + " -> " +
                                          std::string(to->name) + " (device " + target + ")");
  }
  HotswapOutput out{.where = "hotswap pass \"" + pass->name + "\" for device " + target};
  if (pass->device_check) {
    if (auto checked = pass->device_check(device); !checked) return std::move(checked).error().with_context(out.where);
  }
  auto bytes = pass->transform(source, device);
  if (!bytes) return std::move(bytes).error().with_context(out.where);
  out.bytes = std::move(*bytes);
  return out;
}

}  // namespace coload
