// A kernel's kernarg layout: explicit bytes first, then the hidden suffix
// (docs/format.md "Kernarg segment"; docs/loading.md says why it matters).
#include "code_object/kernarg_layout.h"
#include "code_object/metadata.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

namespace coload::detail {
namespace {

constexpr std::uint64_t kMax32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kMaxLayoutProblems = 16;

bool pointer_kind(ValueKind kind) {
  switch (kind) {
    case ValueKind::GlobalBuffer:
    case ValueKind::DynamicSharedPointer:
    case ValueKind::Sampler:
    case ValueKind::Image:
    case ValueKind::Pipe:
    case ValueKind::Queue: return true;
    default: return false;
  }
}

std::uint64_t end_of(const KernelArg& arg) { return std::uint64_t{arg.offset} + arg.size; }

std::uint32_t saturate(std::uint64_t value) { return static_cast<std::uint32_t>(std::min(value, kMax32)); }

// `args[3] ("bias", by_value)`
std::string describe(const std::vector<KernelArg>& args, std::size_t index) {
  const KernelArg& arg = args[index];
  std::string text = "args[" + std::to_string(index) + "]";
  std::string detail;
  if (!arg.name.empty()) detail = "\"" + printable(arg.name, kMessageNameLimit) + "\"";
  if (!arg.kind_text.empty()) detail += (detail.empty() ? "" : ", ") + arg.kind_text;
  return detail.empty() ? text : text + " (" + detail + ")";
}

std::string field(std::size_t index, const char* member) { return "args[" + std::to_string(index) + "]." + member; }

}  // namespace

KernargLayout kernarg_layout(const Kernel& kernel, std::vector<Problem>& problems) {
  const std::vector<KernelArg>& args = kernel.args;
  KernargLayout layout;
  layout.segment_size = kernel.kernarg_segment_size;
  layout.segment_align = kernel.kernarg_segment_align;

  std::uint64_t explicit_end = 0, hidden_end = 0;
  std::optional<std::size_t> first_hidden;  // index of the hidden argument at the lowest offset
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (is_hidden(args[i].kind)) {
      hidden_end = std::max(hidden_end, end_of(args[i]));
      if (!first_hidden || args[i].offset < args[*first_hidden].offset) first_hidden = i;
    } else {
      explicit_end = std::max(explicit_end, end_of(args[i]));
    }
  }
  layout.explicit_size = saturate(explicit_end);
  layout.hidden_end = saturate(hidden_end);
  if (first_hidden) layout.hidden_offset = args[*first_hidden].offset;

  // At most kMaxLayoutProblems findings per kernel, then one that counts the
  // rest: 65 536 arguments that each overlap the first would otherwise each
  // be reported, each copying the kernel's name.
  std::size_t reported = 0;
  auto report = [&](std::string field_name, std::string message) {
    if (reported++ >= kMaxLayoutProblems) return;
    problems.push_back(
        Problem{.kind = ErrorKind::Malformed,
                .kernel = kernel.name,
                .field = std::move(field_name),
                .message = "kernel \"" + printable(kernel.name, kMessageNameLimit) + "\": " + std::move(message)});
  };

  // Overlaps, found in offset order: an argument starting before the furthest
  // end seen so far shares bytes with the argument that reaches that end.
  std::vector<std::size_t> by_offset(args.size());
  std::iota(by_offset.begin(), by_offset.end(), std::size_t{0});
  std::sort(by_offset.begin(), by_offset.end(),
            [&](std::size_t a, std::size_t b) { return std::pair(args[a].offset, a) < std::pair(args[b].offset, b); });
  std::vector<std::optional<std::size_t>> overlaps(args.size());
  std::optional<std::size_t> furthest;
  for (std::size_t index : by_offset) {
    if (args[index].size == 0) continue;
    if (furthest && args[index].offset < end_of(args[*furthest])) overlaps[index] = furthest;
    if (!furthest || end_of(args[index]) > end_of(args[*furthest])) furthest = index;
  }

  for (std::size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args[i];
    bool hidden = is_hidden(arg.kind);
    if (!hidden && first_hidden && arg.offset >= *layout.hidden_offset) {
      report(field(i, "offset"), describe(args, i) + " at offset " + std::to_string(arg.offset) +
                                     " is at or after the first hidden argument, " + describe(args, *first_hidden) +
                                     " at offset " + std::to_string(*layout.hidden_offset));
    }
    if (overlaps[i]) {
      const KernelArg& other = args[*overlaps[i]];
      report(field(i, "offset"), describe(args, i) + " at offset " + std::to_string(arg.offset) + " overlaps " +
                                     describe(args, *overlaps[i]) + ", which covers bytes [" +
                                     std::to_string(other.offset) + ", " + std::to_string(end_of(other)) + ")");
    }
    if (end_of(arg) > layout.segment_size) {
      report(field(i, "size"), describe(args, i) + " ends at byte " + std::to_string(end_of(arg)) + " (offset " +
                                   std::to_string(arg.offset) + " + size " + std::to_string(arg.size) +
                                   "), past .kernarg_segment_size " + std::to_string(layout.segment_size));
    }
    if (!hidden && pointer_kind(arg.kind) && std::has_single_bit(arg.size)) {
      std::uint32_t align = arg.size;
      if (std::has_single_bit(layout.segment_align)) align = std::min(align, layout.segment_align);
      if (arg.offset % align != 0) {
        report(field(i, "offset"), describe(args, i) + " at offset " + std::to_string(arg.offset) +
                                       " is not a multiple of its alignment " + std::to_string(align) + " (its size " +
                                       std::to_string(arg.size) + ", at most .kernarg_segment_align " +
                                       std::to_string(layout.segment_align) + ")");
      }
    }
  }
  if (reported > kMaxLayoutProblems) {
    problems.push_back(Problem{.kind = ErrorKind::Malformed,
                               .kernel = kernel.name,
                               .field = "args",
                               .message = "kernel \"" + printable(kernel.name, kMessageNameLimit) +
                                          "\": " + std::to_string(reported - kMaxLayoutProblems) +
                                          " more kernarg layout problems are not listed"});
  }
  return layout;
}

void compute_kernarg_layout(Kernel& kernel, std::vector<Problem>& problems) {
  kernel.layout = kernarg_layout(kernel, problems);
}

}  // namespace coload::detail
