// Checks of a code object against a device and of a dispatch against a kernel
// (docs/loading.md, "What the runtimes check themselves"): what ROCr
// and HIP check late, asynchronously or not at all.
#include "coload/validate.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "code_object/kernarg_layout.h"
#include "common/bytes.h"
#include "select/target_rules.h"

namespace coload {
namespace {

/// The largest work-group any AMDGPU device runs (HSA_AGENT_INFO_WORKGROUP_MAX_SIZE).
constexpr std::uint64_t kMaxWorkgroupSize = 1024;
/// The AQL packet's group_segment_size is 32 bits wide: the bound when the device's LDS is unknown.
constexpr std::uint64_t kMaxPacketGroupSegment = std::numeric_limits<std::uint32_t>::max();

std::string prefix(const Kernel& kernel) { return "kernel \"" + kernel.name + "\": "; }

std::string dims(const std::array<std::uint32_t, 3>& size) {
  return std::to_string(size[0]) + "x" + std::to_string(size[1]) + "x" + std::to_string(size[2]);
}

// Saturates at UINT64_MAX, which no limit reaches.
std::uint64_t product(const std::array<std::uint32_t, 3>& size) {
  auto xy = detail::checked_mul(size[0], size[1]);
  auto xyz = xy ? detail::checked_mul(*xy, size[2]) : std::nullopt;
  return xyz.value_or(std::numeric_limits<std::uint64_t>::max());
}

bool all_zero(const std::array<std::uint32_t, 3>& size) { return size == std::array<std::uint32_t, 3>{0, 0, 0}; }

std::string_view processor_name(const Device& device) { return device.target.processor_name(); }

/// The generic family a processor belongs to (a generic target: itself).
std::string_view family_of(const Processor& processor) {
  return processor.is_generic ? processor.name : processor.generic_family;
}

/// A processor whose LDS holds `bytes`, for the "(built for X?)" hint: the code
/// object's own processor when it fits; otherwise, among processors that fit,
/// one of the same generic family, then of the same ISA major version, then
/// any, the smallest LDS first and table order among equals. Never the
/// device's own processor (its LDS is the one exceeded); null when none fits.
const Processor* lds_hint(const CodeObject& code_object, const Device& device, std::uint64_t bytes) {
  const Processor* mine = device.target.processor;
  const Processor* theirs = code_object.target().target.processor;
  auto fits = [&](const Processor* p) { return p && p != mine && p->lds_bytes != 0 && p->lds_bytes >= bytes; };
  if (fits(theirs)) return theirs;
  auto closeness = [&](const Processor& p) {
    if (!theirs) return 2;
    if (!family_of(*theirs).empty() && family_of(p) == family_of(*theirs)) return 0;
    return p.isa_major == theirs->isa_major ? 1 : 2;
  };
  const Processor* best = nullptr;
  for (const Processor& row : processors()) {
    if (row.is_generic || !fits(&row)) continue;
    if (!best || std::pair(closeness(row), row.lds_bytes) < std::pair(closeness(*best), best->lds_bytes)) best = &row;
  }
  return best;
}

class Validator {
 public:
  Validator(const CodeObject& code_object, const Device& device) : code_object_(code_object), device_(device) {}

  std::vector<Violation> run() {
    check_version();
    check_target();
    for (const Kernel& kernel : code_object_.kernels()) check_kernel(kernel);
    return std::move(violations_);
  }

 private:
  void add(ErrorKind kind, std::string kernel, std::string field, std::uint64_t value, std::uint64_t limit,
           std::string message) {
    violations_.push_back(Violation{.kind = kind,
                                    .kernel = std::move(kernel),
                                    .field = std::move(field),
                                    .value = value,
                                    .limit = limit,
                                    .message = std::move(message)});
  }

  void check_version() {
    unsigned version = code_object_.target().code_object_version;
    if (device_.accepts_code_object_version(version)) return;
    unsigned highest = device_.code_object_versions.empty() ? 0 : device_.code_object_versions.back();
    add(ErrorKind::UnsupportedVersion, "", "code_object_version", version, highest,
        "code_object_version " + std::to_string(version) + " is not one coload offers to " +
            (device_.runtime_release.empty() ? "the runtime of " : device_.runtime_release + " on ") + device_.str() +
            " (versions " + device_.code_object_versions_text() + ")");
  }

  // The selector's target rules (native, opt-in equivalent, generic family);
  // hotswap sources are transpiled before they are loaded, so never valid as is.
  void check_target() {
    const CodeObjectTarget& code = code_object_.target();
    // check_version has judged the version; judge the target as if accepted.
    Device any_version = device_;
    any_version.code_object_versions = {code.code_object_version};
    detail::TargetJudgement judgement = detail::judge_target(code, any_version, SelectOptions{});
    if (judgement.tier) return;
    std::string message = judgement.field == "target" ? "target " + code.target.str() + " does not run on device " +
                                                            device_.str() + ": " + judgement.reason
                                                      : code.target.str() + ": " + judgement.reason;
    add(judgement.kind, "", judgement.field, judgement.value, judgement.limit, std::move(message));
  }

  void check_kernel(const Kernel& kernel) {
    std::uint64_t lds = device_.lds_bytes;
    if (lds != 0 && kernel.group_segment_fixed_size > lds) {
      std::string message = prefix(kernel) + "group_segment_fixed_size " +
                            std::to_string(kernel.group_segment_fixed_size) + " exceeds the " + std::to_string(lds) +
                            "-byte LDS of " + std::string(processor_name(device_));
      if (const Processor* hint = lds_hint(code_object_, device_, kernel.group_segment_fixed_size)) {
        message += " (built for " + std::string(hint->name) + "?)";
      }
      add(ErrorKind::LimitExceeded, kernel.name, "group_segment_fixed_size", kernel.group_segment_fixed_size, lds,
          std::move(message));
    }

    std::uint32_t wave = kernel.wavefront_size;
    std::uint8_t supported = device_.wave_sizes;
    std::uint64_t device_wave = supported & kWave64 ? 64 : 32;
    if (wave != 32 && wave != 64) {
      add(ErrorKind::Malformed, kernel.name, "wavefront_size", wave, device_wave,
          prefix(kernel) + "wavefront_size " + std::to_string(wave) + " is neither 32 nor 64");
    } else if (supported != 0 && !(supported & (wave == 32 ? kWave32 : kWave64))) {
      add(ErrorKind::InvalidArgument, kernel.name, "wavefront_size", wave, device_wave,
          prefix(kernel) + "wavefront_size " + std::to_string(wave) + " is not supported by " +
              std::string(processor_name(device_)) + " (wave" + std::to_string(device_wave) + " only)");
    }

    if (kernel.max_flat_workgroup_size > kMaxWorkgroupSize) {
      add(ErrorKind::LimitExceeded, kernel.name, "max_flat_workgroup_size", kernel.max_flat_workgroup_size,
          kMaxWorkgroupSize,
          prefix(kernel) + "max_flat_workgroup_size " + std::to_string(kernel.max_flat_workgroup_size) + " exceeds " +
              std::to_string(kMaxWorkgroupSize) + ", the largest work-group of any AMDGPU device");
    }
    if (kernel.reqd_workgroup_size && !all_zero(*kernel.reqd_workgroup_size)) {
      std::uint64_t items = product(*kernel.reqd_workgroup_size);
      std::uint64_t limit = kernel.max_flat_workgroup_size != 0 ? kernel.max_flat_workgroup_size : kMaxWorkgroupSize;
      if (items > limit) {
        add(ErrorKind::InvalidArgument, kernel.name, "reqd_workgroup_size", items, limit,
            prefix(kernel) + "reqd_workgroup_size " + dims(*kernel.reqd_workgroup_size) + " = " +
                std::to_string(items) + " work-items exceeds max_flat_workgroup_size " + std::to_string(limit));
      }
    }
  }

  const CodeObject& code_object_;
  const Device& device_;
  std::vector<Violation> violations_;
};

Expected<void> check_kernarg_bytes(const Kernel& kernel, const KernargLayout& layout, std::uint64_t bytes) {
  // No `.args` (hand-written metadata often lists none) says nothing about
  // where the explicit arguments end: an explicit size of 0 must not mean
  // "whatever the caller passes", so the buffer is the whole segment.
  if (kernel.args.empty() && bytes != layout.segment_size) {
    return Error(ErrorKind::SizeMismatch, prefix(kernel) + "kernarg_bytes " + std::to_string(bytes) +
                                              " is not .kernarg_segment_size " + std::to_string(layout.segment_size) +
                                              ", which the buffer must cover: the metadata lists no .args")
        .at_field("kernarg_bytes", std::nullopt, bytes, layout.segment_size);
  }
  if (bytes < layout.explicit_size) {
    return Error(ErrorKind::SizeMismatch, prefix(kernel) + "kernarg_bytes " + std::to_string(bytes) +
                                              " is shorter than the explicit arguments, which end at byte " +
                                              std::to_string(layout.explicit_size))
        .at_field("kernarg_bytes", std::nullopt, bytes, layout.explicit_size);
  }
  if (layout.hidden_offset && bytes > *layout.hidden_offset) {
    return Error(ErrorKind::SizeMismatch, prefix(kernel) + "kernarg_bytes " + std::to_string(bytes) +
                                              " runs into the hidden arguments, which start at offset " +
                                              std::to_string(*layout.hidden_offset))
        .at_field("kernarg_bytes", std::nullopt, bytes, *layout.hidden_offset);
  }
  if (bytes > layout.segment_size) {
    return Error(ErrorKind::SizeMismatch, prefix(kernel) + "kernarg_bytes " + std::to_string(bytes) +
                                              " exceeds .kernarg_segment_size " + std::to_string(layout.segment_size))
        .at_field("kernarg_bytes", std::nullopt, bytes, layout.segment_size);
  }
  return {};
}

Expected<void> check_lds(const Kernel& kernel, const Device& device, std::uint64_t dynamic) {
  std::string limit_text =
      device.lds_bytes != 0
          ? "the " + std::to_string(device.lds_bytes) + "-byte LDS of " + std::string(processor_name(device))
          : std::to_string(kMaxPacketGroupSegment) + ", the largest group segment an AQL packet carries";
  std::uint64_t limit = device.lds_bytes != 0 ? device.lds_bytes : kMaxPacketGroupSegment;
  std::string sum = prefix(kernel) + "group_segment_fixed_size " + std::to_string(kernel.group_segment_fixed_size) +
                    " + dynamic_lds " + std::to_string(dynamic);
  // The field at fault is dynamic_lds; its limit, what the static LDS leaves of the device's.
  const std::uint64_t room = limit - std::min<std::uint64_t>(limit, kernel.group_segment_fixed_size);
  auto total = detail::checked_add(kernel.group_segment_fixed_size, dynamic);
  if (!total) {
    return Error(ErrorKind::LimitExceeded, sum + " overflows 64 bits (limit: " + limit_text + ")")
        .at_field("dynamic_lds", std::nullopt, dynamic, room);
  }
  if (*total > limit) {
    return Error(ErrorKind::LimitExceeded, sum + " = " + std::to_string(*total) + " bytes exceeds " + limit_text)
        .at_field("dynamic_lds", std::nullopt, dynamic, room);
  }
  return {};
}

Expected<void> check_workgroup(const Kernel& kernel, const std::array<std::uint32_t, 3>& size) {
  for (std::size_t axis = 0; axis < size.size(); ++axis) {
    if (size[axis] == 0) {
      return Error(ErrorKind::InvalidArgument, prefix(kernel) + "workgroup_size[" + std::to_string(axis) +
                                                   "] is 0 (workgroup size " + dims(size) + ")")
          .at_field("workgroup_size[" + std::to_string(axis) + "]", std::nullopt, 0);
    }
  }
  std::uint64_t items = product(size);
  // 0 means the kernel did not say; the ABI default is the device maximum.
  std::uint64_t limit = kernel.max_flat_workgroup_size != 0 ? kernel.max_flat_workgroup_size : kMaxWorkgroupSize;
  if (items > limit) {
    return Error(ErrorKind::InvalidArgument,
                 prefix(kernel) + "workgroup size " + dims(size) + " = " + std::to_string(items) +
                     " work-items exceeds " +
                     (kernel.max_flat_workgroup_size != 0 ? "max_flat_workgroup_size " + std::to_string(limit)
                                                          : std::to_string(limit) + ", the device maximum"))
        .at_field("workgroup_size", std::nullopt, items, limit);
  }
  if (kernel.reqd_workgroup_size && !all_zero(*kernel.reqd_workgroup_size) && size != *kernel.reqd_workgroup_size) {
    return Error(ErrorKind::InvalidArgument, prefix(kernel) + "workgroup size " + dims(size) +
                                                 " differs from reqd_workgroup_size " +
                                                 dims(*kernel.reqd_workgroup_size))
        .at_field("workgroup_size", std::nullopt, items);
  }
  return {};
}

}  // namespace

std::vector<Violation> validate(const CodeObject& code_object, const Device& device) {
  return Validator(code_object, device).run();
}

Expected<void> admit(const CodeObject& code_object, const Device& device, std::string_view what) {
  const std::string subject = what.empty() ? std::string() : std::string(what) + " ";
  std::size_t kernel_problems = 0;
  const Problem* first = nullptr;
  for (const Problem& problem : code_object.problems()) {
    if (problem.kernel.empty()) continue;
    if (!first) first = &problem;
    ++kernel_problems;
  }
  if (first) {
    return Error(first->kind,
                 subject + "has " + std::to_string(kernel_problems) + " kernel problem(s), first: " + first->message)
        .at_field(first->field, std::nullopt);
  }
  std::vector<Violation> violations = validate(code_object, device);
  if (!violations.empty()) {
    const Violation& front = violations.front();
    return Error(front.kind, subject + "refused by the validator: " + front.message +
                                 (violations.size() > 1 ? " (and " + std::to_string(violations.size() - 1) + " more)"
                                                        : std::string()))
        .at_field(front.field, std::nullopt, front.value, front.limit);
  }
  return {};
}

Expected<void> check_dispatch(const Kernel& kernel, const Device& device, const Dispatch& dispatch) {
  std::vector<Problem> problems;
  KernargLayout layout = detail::kernarg_layout(kernel, problems);
  if (!problems.empty()) {
    return Error(ErrorKind::Malformed, problems.front().message + "; the kernel cannot be dispatched");
  }
  if (auto checked = check_kernarg_bytes(kernel, layout, dispatch.kernarg_bytes); !checked) return checked;
  if (auto checked = check_lds(kernel, device, dispatch.dynamic_lds); !checked) return checked;
  return check_workgroup(kernel, dispatch.workgroup_size);
}

}  // namespace coload
