// Kernarg layouts, validate() and check_dispatch() on kernels and code objects
// built in the test, each check with its exact kind, field, value and limit.
// The toolchain-built fixtures run end to end at the bottom.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "codeobject/kernarg_layout.h"
#include "coload/validate.h"
#include "test_util.h"

namespace coload {
namespace {

using namespace coload::testing;

KernelArg arg(std::uint32_t offset, std::uint32_t size, ValueKind kind, std::string kind_text,
              std::string name = "") {
  KernelArg result;
  result.name = std::move(name);
  result.offset = offset;
  result.size = size;
  result.kind = kind;
  result.kind_text = std::move(kind_text);
  return result;
}
KernelArg ptr(std::uint32_t offset, std::string name = "") {
  return arg(offset, 8, ValueKind::GlobalBuffer, "global_buffer", std::move(name));
}
KernelArg value(std::uint32_t offset, std::uint32_t size, std::string name = "") {
  return arg(offset, size, ValueKind::ByValue, "by_value", std::move(name));
}
KernelArg hidden(std::uint32_t offset, std::uint32_t size, ValueKind kind, std::string kind_text) {
  return arg(offset, size, kind, std::move(kind_text));
}

// A wave64 kernel that fits every gfx9 device; its layout computed.
Kernel kernel(std::string name, std::uint32_t segment_size, std::vector<KernelArg> args,
              std::uint32_t segment_align = 8) {
  Kernel k;
  k.name = name;
  k.symbol = name + ".kd";
  k.kernarg_segment_size = segment_size;
  k.kernarg_segment_align = segment_align;
  k.wavefront_size = 64;
  k.max_flat_workgroup_size = 1024;
  k.args = std::move(args);
  std::vector<Problem> ignored;
  detail::compute_kernarg_layout(k, ignored);
  return k;
}

std::vector<Problem> problems_of(const Kernel& k) {
  std::vector<Problem> problems;
  detail::kernarg_layout(k, problems);
  return problems;
}

DeviceOverrides with_lds(std::uint64_t bytes) {
  DeviceOverrides overrides;
  overrides.lds_bytes = bytes;
  return overrides;
}
DeviceOverrides with_versions(std::vector<unsigned> versions) {
  DeviceOverrides overrides;
  overrides.code_object_versions = std::move(versions);
  return overrides;
}

Device device(std::string_view spec, DeviceOverrides overrides = {}) {
  auto result = device_from_spec(spec, overrides);
  EXPECT_TRUE(Succeeds(result)) << spec;
  return *result;
}

CodeObject code_object(std::string_view target, std::vector<Kernel> kernels, unsigned version = 5,
                       unsigned generic_version = 0) {
  auto id = TargetId::parse(target);
  EXPECT_TRUE(Succeeds(id)) << target;
  CodeObjectTarget code{.target = *id, .code_object_version = version, .generic_version = generic_version};
  Metadata metadata;
  metadata.version_major = 1;
  metadata.version_minor = 2;
  metadata.target = "amdgcn-amd-amdhsa--" + std::string(target);
  metadata.kernels = std::move(kernels);
  return CodeObject(std::move(code), std::move(metadata), {}, {}, 0);
}

// The violations of one field.
std::vector<Violation> of_field(const std::vector<Violation>& all, std::string_view field) {
  std::vector<Violation> result;
  for (const Violation& v : all) {
    if (v.field == field) result.push_back(v);
  }
  return result;
}

std::string fields(const std::vector<Violation>& all) {
  std::string text;
  for (const Violation& v : all) text += (text.empty() ? "" : " ") + v.field;
  return text;
}

// ---------------------------------------------------------------------------
// Kernarg layouts.

TEST(KernargLayout, NoArguments) {
  Kernel k = kernel("empty", 0, {});
  EXPECT_EQ(k.layout.explicit_size, 0u);
  EXPECT_FALSE(k.layout.hidden_offset);
  EXPECT_EQ(k.layout.hidden_end, 0u);
  EXPECT_EQ(k.layout.segment_size, 0u);
  EXPECT_EQ(k.layout.segment_align, 8u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, OnlyHiddenArguments) {
  Kernel k = kernel("only_hidden", 24,
                    {hidden(0, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(12, 2, ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
                     hidden(16, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x")});
  EXPECT_EQ(k.layout.explicit_size, 0u);
  EXPECT_EQ(k.layout.hidden_offset, 0u);
  EXPECT_EQ(k.layout.hidden_end, 24u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, ExplicitPrefixThenTheV5HiddenBlock) {
  // clang -O0 v5: a pointer, an int, then the implicit block at 16 (12 aligned up to 8).
  Kernel k = kernel("saxpy", 272,
                    {ptr(0, "x"), value(8, 4, "n"),
                     hidden(16, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(28, 2, ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
                     hidden(136, 4, ValueKind::HiddenDynamicLdsSize, "hidden_dynamic_lds_size"),
                     hidden(216, 8, ValueKind::HiddenQueuePtr, "hidden_queue_ptr")});
  EXPECT_EQ(k.layout.explicit_size, 12u);
  EXPECT_EQ(k.layout.hidden_offset, 16u);
  EXPECT_EQ(k.layout.hidden_end, 224u);
  EXPECT_EQ(k.layout.segment_size, 272u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, HiddenArgumentsInAnyMetadataOrder) {
  Kernel k = kernel("shuffled", 40,
                    {hidden(32, 8, ValueKind::HiddenQueuePtr, "hidden_queue_ptr"), ptr(0),
                     hidden(8, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x")});
  EXPECT_EQ(k.layout.explicit_size, 8u);
  EXPECT_EQ(k.layout.hidden_offset, 8u);
  EXPECT_EQ(k.layout.hidden_end, 40u);
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, ExplicitArgumentAfterAHiddenOneIsAProblem) {
  // The hrx-system PR #12 case: a visible by_value at 16 after a hidden arg at 8.
  Kernel k = kernel("late", 24,
                    {ptr(0, "out"), hidden(8, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x"),
                     value(16, 4, "n")});
  EXPECT_EQ(k.layout.explicit_size, 20u);
  EXPECT_EQ(k.layout.hidden_offset, 8u);
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ErrorKind::Malformed);
  EXPECT_EQ(problems[0].kernel, "late");
  EXPECT_EQ(problems[0].field, "args[2].offset");
  EXPECT_EQ(problems[0].message,
            "kernel \"late\": args[2] (\"n\", by_value) at offset 16 is at or after the first hidden argument, "
            "args[1] (hidden_global_offset_x) at offset 8");
}

TEST(KernargLayout, ExplicitArgumentAtTheFirstHiddenOffsetIsAProblem) {
  Kernel k = kernel("same", 16,
                    {hidden(8, 0, ValueKind::HiddenNone, "hidden_none"), value(8, 4, "n"), ptr(0)});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[1].offset");
}

TEST(KernargLayout, OverlappingArguments) {
  Kernel k = kernel("overlap", 16, {value(0, 8, "a"), value(4, 4, "b"), value(8, 8, "c")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, ErrorKind::Malformed);
  EXPECT_EQ(problems[0].field, "args[1].offset");
  EXPECT_EQ(problems[0].message,
            "kernel \"overlap\": args[1] (\"b\", by_value) at offset 4 overlaps args[0] (\"a\", by_value), which "
            "covers bytes [0, 8)");
}

TEST(KernargLayout, OverlapIsFoundWhateverTheMetadataOrder) {
  Kernel k = kernel("overlap", 32, {value(16, 4, "late"), value(0, 24, "wide")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[0].offset");
  EXPECT_NE(problems[0].message.find("overlaps args[1] (\"wide\", by_value), which covers bytes [0, 24)"),
            std::string::npos)
      << problems[0].message;
}

TEST(KernargLayout, EmptyArgumentsOverlapNothing) {
  Kernel k = kernel("empty_struct", 8, {value(0, 8, "a"), value(4, 0, "nothing")});
  EXPECT_TRUE(problems_of(k).empty());
}

TEST(KernargLayout, ArgumentPastTheSegment) {
  Kernel k = kernel("short", 20, {ptr(0), value(16, 8, "x")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[1].size");
  EXPECT_EQ(problems[0].message,
            "kernel \"short\": args[1] (\"x\", by_value) ends at byte 24 (offset 16 + size 8), past "
            ".kernarg_segment_size 20");
}

TEST(KernargLayout, OffsetPlusSizeBeyond32BitsIsComputedIn64) {
  Kernel k = kernel("huge", 64, {value(0xfffffff0u, 0x20, "x")});
  EXPECT_EQ(k.layout.explicit_size, std::numeric_limits<std::uint32_t>::max());
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[0].size");
  EXPECT_NE(problems[0].message.find("ends at byte 4294967312 (offset 4294967280 + size 32)"), std::string::npos)
      << problems[0].message;
}

TEST(KernargLayout, UnalignedPartialHiddenBlockIsFine) {
  // MIOpen-style assembly: the hidden block starts at byte 201 and declares
  // only some fields; the segment ends before a full 256-byte block.
  Kernel k = kernel("miopen_asm", 224,
                    {ptr(0, "in"), ptr(8, "out"), value(16, 184, "params"), value(200, 1, "flag"),
                     hidden(201, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(213, 2, ValueKind::HiddenGroupSizeX, "hidden_group_size_x"),
                     hidden(215, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x")},
                    4);
  EXPECT_EQ(k.layout.explicit_size, 201u);
  EXPECT_EQ(k.layout.hidden_offset, 201u);
  EXPECT_EQ(k.layout.hidden_end, 223u);
  auto problems = problems_of(k);
  EXPECT_TRUE(problems.empty()) << problems.front().message;
}

TEST(KernargLayout, PointerOffsetMustBeNaturallyAligned) {
  Kernel k = kernel("misaligned", 16, {value(0, 4, "n"), ptr(4, "p")});
  auto problems = problems_of(k);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "args[1].offset");
  EXPECT_EQ(problems[0].message,
            "kernel \"misaligned\": args[1] (\"p\", global_buffer) at offset 4 is not a multiple of its alignment 8 "
            "(its size 8, at most .kernarg_segment_align 8)");
  // A segment declared 4-aligned (hand-written assembly) only needs dword alignment.
  EXPECT_TRUE(problems_of(kernel("dword", 12, {value(0, 4, "n"), ptr(4, "p")}, 4)).empty());
}

TEST(KernargLayout, PointeeAlignDoesNotConstrainTheOffset) {
  // clang-22 for `local float4* l` after a global pointer: offset 8, size 4, pointee_align 16.
  KernelArg local = arg(8, 4, ValueKind::DynamicSharedPointer, "dynamic_shared_pointer", "l");
  local.pointee_align = 16;
  local.address_space = AddressSpace::Local;
  EXPECT_TRUE(problems_of(kernel("opencl", 12, {ptr(0, "a"), local})).empty());
}

TEST(KernargLayout, ByValueArgumentsHaveNoDeclaredAlignment) {
  EXPECT_TRUE(problems_of(kernel("packed", 16, {value(0, 1, "c"), value(1, 8, "pair")})).empty());
}

// ---------------------------------------------------------------------------
// validate(): object-wide checks.

TEST(Validate, NativeObjectThatFitsHasNoViolations) {
  Kernel k = kernel("gemm", 16, {ptr(0), ptr(8)});
  k.group_segment_fixed_size = 65536;
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942")).empty());
}

TEST(Validate, CodeObjectVersionTheRuntimeDoesNotLoad) {
  auto violations = validate(code_object("gfx90a", {}, 6),
                             device("gfx90a", with_versions({4, 5})));
  ASSERT_EQ(violations.size(), 1u);
  const Violation& v = violations[0];
  EXPECT_EQ(v.kind, ErrorKind::UnsupportedVersion);
  EXPECT_EQ(v.kernel, "");
  EXPECT_EQ(v.field, "code_object_version");
  EXPECT_EQ(v.value, 6u);
  EXPECT_EQ(v.limit, 5u);
  EXPECT_EQ(v.message,
            "code_object_version 6 is not loaded by the runtime of gfx90a:sramecc+:xnack- (it loads versions 4, 5)");
}

TEST(Validate, DifferentProcessor) {
  auto violations = validate(code_object("gfx950", {}), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  const Violation& v = violations[0];
  EXPECT_EQ(v.kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(v.field, "target");
  EXPECT_EQ(v.value, 0x4fu);
  EXPECT_EQ(v.limit, 0x4cu);
  EXPECT_EQ(v.message,
            "target gfx950 does not run on device gfx942:sramecc+:xnack-: built for gfx950; device is gfx942");
}

// The selector's own rules: a same-ISA object is valid only on a device that opted in.
TEST(Validate, EquivalentIsaOnlyForADeviceThatOptedIn) {
  auto refused = validate(code_object("gfx1030", {}), device("gfx1031"));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].field, "target");
  EXPECT_EQ(refused[0].message,
            "target gfx1030 does not run on device gfx1031: runs on gfx1031 only with extended ISA compatibility, "
            "which is off for this device");
  DeviceOverrides opted_in;
  opted_in.extended_isa_compat = true;
  EXPECT_TRUE(validate(code_object("gfx1030", {}), device("gfx1031", opted_in)).empty());
}

TEST(Validate, FeatureModeMismatch) {
  auto violations = validate(code_object("gfx942:xnack+", {}), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "target");
  EXPECT_EQ(violations[0].message,
            "target gfx942:xnack+ does not run on device gfx942:sramecc+:xnack-: device runs with xnack-");
  EXPECT_TRUE(validate(code_object("gfx942:xnack-", {}), device("gfx942")).empty());
  EXPECT_TRUE(validate(code_object("gfx942:sramecc+:xnack-", {}), device("gfx942")).empty());
}

TEST(Validate, GenericFamilyAtASufficientVersion) {
  EXPECT_TRUE(validate(code_object("gfx9-4-generic", {}, 6, 1), device("gfx942")).empty());
  EXPECT_TRUE(validate(code_object("gfx9-4-generic", {}, 6, 1), device("gfx950")).empty());
}

TEST(Validate, GenericTargetOfAnotherFamily) {
  auto violations = validate(code_object("gfx9-generic", {}, 6, 1), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(violations[0].field, "target");
  EXPECT_EQ(violations[0].value, 0x51u);
  EXPECT_EQ(violations[0].limit, 0x4cu);
  EXPECT_EQ(violations[0].message,
            "target gfx9-generic does not run on device gfx942:sramecc+:xnack-: generic target gfx9-generic does not "
            "cover gfx942 (its family is gfx9-4-generic)");
}

TEST(Validate, GenericTargetBelowVersion6) {
  auto violations = validate(code_object("gfx9-4-generic", {}, 5, 0), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::UnsupportedVersion);
  EXPECT_EQ(violations[0].field, "code_object_version");
  EXPECT_EQ(violations[0].value, 5u);
  EXPECT_EQ(violations[0].limit, 6u);
}

TEST(Validate, GenericVersionBelowTheDevicesMinimum) {
  auto violations = validate(code_object("gfx9-4-generic", {}, 6, 0), device("gfx950"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::UnsupportedVersion);
  EXPECT_EQ(violations[0].field, "generic_version");
  EXPECT_EQ(violations[0].value, 0u);
  EXPECT_EQ(violations[0].limit, 1u);
  EXPECT_EQ(violations[0].message, "gfx9-4-generic: generic version 0 is below 1, the first to support gfx950");
}

TEST(Validate, GenericFeatureMismatch) {
  auto violations = validate(code_object("gfx9-4-generic:xnack+", {}, 6, 1), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "target");
  EXPECT_NE(violations[0].message.find(": device runs with xnack-"), std::string::npos) << violations[0].message;
}

// ---------------------------------------------------------------------------
// validate(): per-kernel checks.

TEST(Validate, StaticLdsOverTheDeviceNamesTheProcessorItFits) {
  // docs/loading.md: a .co built for gfx950 (160 KiB LDS) checked against gfx942 (64 KiB).
  Kernel k = kernel("gemm_128x128", 16, {ptr(0), ptr(8)});
  k.group_segment_fixed_size = 98304;
  auto lds = of_field(validate(code_object("gfx950", {k}), device("gfx942")), "group_segment_fixed_size");
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(lds[0].kind, ErrorKind::LimitExceeded);
  EXPECT_EQ(lds[0].kernel, "gemm_128x128");
  EXPECT_EQ(lds[0].value, 98304u);
  EXPECT_EQ(lds[0].limit, 65536u);
  EXPECT_EQ(lds[0].message,
            "kernel \"gemm_128x128\": group_segment_fixed_size 98304 exceeds the 65536-byte LDS of gfx942 "
            "(built for gfx950?)");
}

TEST(Validate, LdsHintPrefersTheObjectsOwnProcessor) {
  Kernel k = kernel("big", 0, {});
  k.group_segment_fixed_size = 98304;
  // gfx950 (160 KiB) is the smallest that fits, but the object says gfx1250.
  auto lds = of_field(validate(code_object("gfx1250", {k}), device("gfx942")), "group_segment_fixed_size");
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(lds[0].message,
            "kernel \"big\": group_segment_fixed_size 98304 exceeds the 65536-byte LDS of gfx942 (built for gfx1250?)");
}

TEST(Validate, LdsHintForAnObjectBuiltForTheDeviceNamesAnotherProcessor) {
  // Built for gfx942 itself: the nearest processor whose LDS fits, same family first.
  Kernel k = kernel("big", 0, {});
  k.group_segment_fixed_size = 98304;
  auto lds = of_field(validate(code_object("gfx942", {k}), device("gfx942")), "group_segment_fixed_size");
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_NE(lds[0].message.find("(built for gfx950?)"), std::string::npos) << lds[0].message;
  // A smaller LDS given for the device: still a sibling, not the first 64 KiB processor of the table.
  k.group_segment_fixed_size = 40000;
  lds = of_field(validate(code_object("gfx942", {k}), device("gfx942", with_lds(32768))),
                 "group_segment_fixed_size");
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(lds[0].message,
            "kernel \"big\": group_segment_fixed_size 40000 exceeds the 32768-byte LDS of gfx942 (built for gfx950?)");
}

TEST(Validate, LdsHintOmittedWhenNoProcessorFits) {
  Kernel k = kernel("huge", 0, {});
  k.group_segment_fixed_size = 400000;  // above gfx1250's 320 KiB
  auto lds = of_field(validate(code_object("gfx942", {k}), device("gfx942")), "group_segment_fixed_size");
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(lds[0].message, "kernel \"huge\": group_segment_fixed_size 400000 exceeds the 65536-byte LDS of gfx942");
}

TEST(Validate, LdsExactlyAtTheLimitFitsAndUnknownLdsIsNotChecked) {
  Kernel k = kernel("edge", 0, {});
  k.group_segment_fixed_size = 65536;
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942")).empty());
  k.group_segment_fixed_size = 65537;
  EXPECT_EQ(fields(validate(code_object("gfx942", {k}), device("gfx942"))), "group_segment_fixed_size");
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942", with_lds(0))).empty());
}

TEST(Validate, Wave32KernelOnAWave64OnlyDevice) {
  Kernel k = kernel("w32", 0, {});
  k.wavefront_size = 32;
  auto violations = validate(code_object("gfx942", {k}), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(violations[0].kernel, "w32");
  EXPECT_EQ(violations[0].field, "wavefront_size");
  EXPECT_EQ(violations[0].value, 32u);
  EXPECT_EQ(violations[0].limit, 64u);
  EXPECT_EQ(violations[0].message, "kernel \"w32\": wavefront_size 32 is not supported by gfx942 (wave64 only)");
}

TEST(Validate, Wave64KernelOnAWave32OnlyDevice) {
  Kernel k = kernel("w64", 0, {});
  auto violations = validate(code_object("gfx1250", {k}), device("gfx1250"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field, "wavefront_size");
  EXPECT_EQ(violations[0].value, 64u);
  EXPECT_EQ(violations[0].limit, 32u);
  EXPECT_EQ(violations[0].message, "kernel \"w64\": wavefront_size 64 is not supported by gfx1250 (wave32 only)");
}

TEST(Validate, BothWaveSizesOnRdna) {
  Kernel k = kernel("w", 0, {});
  k.wavefront_size = 32;
  EXPECT_TRUE(validate(code_object("gfx1100", {k}), device("gfx1100")).empty());
  k.wavefront_size = 64;
  EXPECT_TRUE(validate(code_object("gfx1100", {k}), device("gfx1100")).empty());
}

TEST(Validate, WaveSizeThatIsNeither32Nor64) {
  Kernel k = kernel("w16", 0, {});
  k.wavefront_size = 16;
  auto violations = validate(code_object("gfx1100", {k}), device("gfx1100"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::Malformed);
  EXPECT_EQ(violations[0].value, 16u);
  EXPECT_EQ(violations[0].message, "kernel \"w16\": wavefront_size 16 is neither 32 nor 64");
}

TEST(Validate, MaxFlatWorkgroupSizeAbove1024) {
  Kernel k = kernel("wide", 0, {});
  k.max_flat_workgroup_size = 1024;
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942")).empty());
  k.max_flat_workgroup_size = 1025;
  auto violations = validate(code_object("gfx942", {k}), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::LimitExceeded);
  EXPECT_EQ(violations[0].field, "max_flat_workgroup_size");
  EXPECT_EQ(violations[0].value, 1025u);
  EXPECT_EQ(violations[0].limit, 1024u);
  EXPECT_EQ(violations[0].message,
            "kernel \"wide\": max_flat_workgroup_size 1025 exceeds 1024, the largest work-group of any AMDGPU device");
}

TEST(Validate, RequiredWorkgroupSizeAboveTheKernelsMaximum) {
  Kernel k = kernel("reqd", 0, {});
  k.max_flat_workgroup_size = 256;
  k.reqd_workgroup_size = std::array<std::uint32_t, 3>{16, 16, 1};
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942")).empty());
  k.reqd_workgroup_size = std::array<std::uint32_t, 3>{16, 16, 2};
  auto violations = validate(code_object("gfx942", {k}), device("gfx942"));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(violations[0].field, "reqd_workgroup_size");
  EXPECT_EQ(violations[0].value, 512u);
  EXPECT_EQ(violations[0].limit, 256u);
  EXPECT_EQ(violations[0].message,
            "kernel \"reqd\": reqd_workgroup_size 16x16x2 = 512 work-items exceeds max_flat_workgroup_size 256");
  // 0,0,0 means unset.
  k.reqd_workgroup_size = std::array<std::uint32_t, 3>{0, 0, 0};
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942")).empty());
}

TEST(Validate, ObjectChecksFirstThenKernelsInMetadataOrder) {
  Kernel a = kernel("a", 0, {});
  a.wavefront_size = 32;
  Kernel b = kernel("b", 0, {});
  b.group_segment_fixed_size = 70000;
  b.max_flat_workgroup_size = 2048;
  auto violations = validate(code_object("gfx950", {a, b}, 6),
                             device("gfx942", with_versions({4, 5})));
  EXPECT_EQ(fields(violations),
            "code_object_version target wavefront_size group_segment_fixed_size max_flat_workgroup_size");
  EXPECT_EQ(violations[2].kernel, "a");
  EXPECT_EQ(violations[3].kernel, "b");
}

// ---------------------------------------------------------------------------
// check_dispatch().

Kernel dispatchable() {
  // 20 explicit bytes, then a hidden block at 24.
  Kernel k = kernel("dispatch", 280,
                    {ptr(0, "out"), ptr(8, "in"), value(16, 4, "n"),
                     hidden(24, 4, ValueKind::HiddenBlockCountX, "hidden_block_count_x"),
                     hidden(140, 4, ValueKind::HiddenDynamicLdsSize, "hidden_dynamic_lds_size")});
  k.group_segment_fixed_size = 32768;
  k.max_flat_workgroup_size = 256;
  return k;
}

TEST(CheckDispatch, KernargBufferBetweenTheExplicitEndAndTheHiddenBlock) {
  Kernel k = dispatchable();
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20})));
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 24})));
  auto short_buffer = check_dispatch(k, gfx942, {.kernarg_bytes = 19});
  ASSERT_TRUE(FailsWith(short_buffer, ErrorKind::SizeMismatch));
  EXPECT_EQ(short_buffer.error().message(),
            "kernel \"dispatch\": kernarg_bytes 19 is shorter than the explicit arguments, which end at byte 20");
  auto long_buffer = check_dispatch(k, gfx942, {.kernarg_bytes = 25});
  ASSERT_TRUE(FailsWith(long_buffer, ErrorKind::SizeMismatch));
  EXPECT_EQ(long_buffer.error().message(),
            "kernel \"dispatch\": kernarg_bytes 25 runs into the hidden arguments, which start at offset 24");
}

TEST(CheckDispatch, KernargBufferWithoutHiddenArgumentsEndsAtTheSegment) {
  Kernel k = kernel("plain", 24, {ptr(0), value(8, 12)});
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 24})));
  auto result = check_dispatch(k, gfx942, {.kernarg_bytes = 25});
  ASSERT_TRUE(FailsWith(result, ErrorKind::SizeMismatch));
  EXPECT_EQ(result.error().message(), "kernel \"plain\": kernarg_bytes 25 exceeds .kernarg_segment_size 24");
  EXPECT_TRUE(FailsWith(check_dispatch(k, gfx942, {.kernarg_bytes = std::numeric_limits<std::uint64_t>::max()}),
                        ErrorKind::SizeMismatch));
}

TEST(CheckDispatch, KernelWithoutArgumentsTakesAnEmptyBuffer) {
  Kernel k = kernel("noargs", 0, {});
  EXPECT_TRUE(Succeeds(check_dispatch(k, device("gfx942"), {})));
  EXPECT_TRUE(FailsWith(check_dispatch(k, device("gfx942"), {.kernarg_bytes = 1}), ErrorKind::SizeMismatch));
}

// docs/loading.md: an explicit size of 0 must not mean "take the caller's length".
// Without `.args` the layout is unknown, so the buffer is the whole segment.
TEST(CheckDispatch, KernelWithoutArgsMetadataTakesTheWholeSegment) {
  Kernel k = kernel("asm_kernel", 24, {});
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 24})));
  for (std::uint64_t bytes : {0u, 4u, 23u, 25u}) {
    auto result = check_dispatch(k, gfx942, {.kernarg_bytes = bytes});
    ASSERT_TRUE(FailsWith(result, ErrorKind::SizeMismatch)) << bytes;
    EXPECT_EQ(result.error().message(), "kernel \"asm_kernel\": kernarg_bytes " + std::to_string(bytes) +
                                            " is not .kernarg_segment_size 24, which the buffer must cover: the "
                                            "metadata lists no .args");
  }
}

TEST(CheckDispatch, StaticPlusDynamicLds) {
  Kernel k = dispatchable();
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .dynamic_lds = 32768})));
  auto over = check_dispatch(k, gfx942, {.kernarg_bytes = 20, .dynamic_lds = 32769});
  ASSERT_TRUE(FailsWith(over, ErrorKind::LimitExceeded));
  EXPECT_EQ(over.error().message(),
            "kernel \"dispatch\": group_segment_fixed_size 32768 + dynamic_lds 32769 = 65537 bytes exceeds the "
            "65536-byte LDS of gfx942");
}

TEST(CheckDispatch, LdsSumOverflowing64BitsIsCaught) {
  Kernel k = dispatchable();
  auto result = check_dispatch(k, device("gfx942"),
                               {.kernarg_bytes = 20, .dynamic_lds = std::numeric_limits<std::uint64_t>::max()});
  ASSERT_TRUE(FailsWith(result, ErrorKind::LimitExceeded));
  EXPECT_EQ(result.error().message(),
            "kernel \"dispatch\": group_segment_fixed_size 32768 + dynamic_lds 18446744073709551615 overflows 64 bits "
            "(limit: the 65536-byte LDS of gfx942)");
}

TEST(CheckDispatch, UnknownLdsIsBoundedByThePacketField) {
  Kernel k = dispatchable();
  k.group_segment_fixed_size = 0;
  Device unknown = device("gfx942", with_lds(0));
  EXPECT_TRUE(Succeeds(check_dispatch(k, unknown, {.kernarg_bytes = 20, .dynamic_lds = 0xffffffffu})));
  auto result = check_dispatch(k, unknown, {.kernarg_bytes = 20, .dynamic_lds = 0x100000000u});
  ASSERT_TRUE(FailsWith(result, ErrorKind::LimitExceeded));
  EXPECT_NE(result.error().message().find("exceeds 4294967295, the largest group segment an AQL packet carries"),
            std::string::npos)
      << result.error().message();
}

TEST(CheckDispatch, WorkgroupSizeWithinTheKernelsMaximum) {
  Kernel k = dispatchable();
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {64, 2, 2}})));
  auto over = check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {257, 1, 1}});
  ASSERT_TRUE(FailsWith(over, ErrorKind::InvalidArgument));
  EXPECT_EQ(over.error().message(),
            "kernel \"dispatch\": workgroup size 257x1x1 = 257 work-items exceeds max_flat_workgroup_size 256");
  auto zero = check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {64, 0, 1}});
  ASSERT_TRUE(FailsWith(zero, ErrorKind::InvalidArgument));
  EXPECT_EQ(zero.error().message(), "kernel \"dispatch\": workgroup_size[1] is 0 (workgroup size 64x0x1)");
  // 2^96 work-items must not wrap to something small.
  EXPECT_TRUE(FailsWith(
      check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {0xffffffffu, 0xffffffffu, 0xffffffffu}}),
      ErrorKind::InvalidArgument));
  EXPECT_TRUE(FailsWith(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {65536, 65536, 1}}),
                        ErrorKind::InvalidArgument));
}

TEST(CheckDispatch, RequiredWorkgroupSizeMustMatchExactly) {
  Kernel k = dispatchable();
  k.reqd_workgroup_size = std::array<std::uint32_t, 3>{64, 1, 1};
  Device gfx942 = device("gfx942");
  EXPECT_TRUE(Succeeds(check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {64, 1, 1}})));
  auto result = check_dispatch(k, gfx942, {.kernarg_bytes = 20, .workgroup_size = {32, 2, 1}});
  ASSERT_TRUE(FailsWith(result, ErrorKind::InvalidArgument));
  EXPECT_EQ(result.error().message(),
            "kernel \"dispatch\": workgroup size 32x2x1 differs from reqd_workgroup_size 64x1x1");
}

TEST(CheckDispatch, KernelWithALayoutProblemCannotBeDispatched) {
  Kernel k = kernel("late", 24,
                    {ptr(0, "out"), hidden(8, 8, ValueKind::HiddenGlobalOffsetX, "hidden_global_offset_x"),
                     value(16, 4, "n")});
  for (std::uint64_t bytes : {8u, 16u, 20u, 24u}) {
    auto result = check_dispatch(k, device("gfx942"), {.kernarg_bytes = bytes});
    ASSERT_TRUE(FailsWith(result, ErrorKind::Malformed)) << bytes;
    EXPECT_EQ(result.error().message(),
              "kernel \"late\": args[2] (\"n\", by_value) at offset 16 is at or after the first hidden argument, "
              "args[1] (hidden_global_offset_x) at offset 8; the kernel cannot be dispatched");
  }
}


// ---------------------------------------------------------------------------
// Toolchain-built fixtures (tests/fixtures/build_fixtures.sh, check/), end to end.

const std::filesystem::path kFixtures = COLOAD_FIXTURE_DIR;

std::optional<CodeObject> read_fixture(const std::string& name) {
  std::ifstream file(kFixtures / name, std::ios::binary);
  EXPECT_TRUE(file.good()) << name;
  std::vector<char> chars((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  auto code_object = CodeObject::read(bytes);
  EXPECT_TRUE(Succeeds(code_object)) << name;
  if (!code_object) return std::nullopt;
  return std::move(*code_object);
}

TEST(ValidateFixtures, Gfx950LdsObjectOnGfx942GivesTheSeedMessage) {
  auto read = read_fixture("check/lds_heavy-gfx950.co");
  ASSERT_TRUE(read);
  const CodeObject& heavy = *read;
  EXPECT_TRUE(heavy.problems().empty()) << heavy.problems().front().message;
  ASSERT_EQ(heavy.kernels().size(), 1u);
  EXPECT_EQ(heavy.kernels()[0].group_segment_fixed_size, 98304u);
  auto violations = validate(heavy, device("gfx942"));
  EXPECT_EQ(fields(violations), "target group_segment_fixed_size");
  auto lds = of_field(violations, "group_segment_fixed_size");
  ASSERT_EQ(lds.size(), 1u);
  EXPECT_EQ(lds[0].kind, ErrorKind::LimitExceeded);
  EXPECT_EQ(lds[0].kernel, "gemm_128x128");
  EXPECT_EQ(lds[0].value, 98304u);
  EXPECT_EQ(lds[0].limit, 65536u);
  EXPECT_EQ(lds[0].message,
            "kernel \"gemm_128x128\": group_segment_fixed_size 98304 exceeds the 65536-byte LDS of gfx942 "
            "(built for gfx950?)");
  EXPECT_TRUE(validate(heavy, device("gfx950")).empty());
  // Dynamic LDS on top of the static 96 KiB: up to gfx950's 160 KiB.
  const Kernel& gemm = heavy.kernels()[0];
  Dispatch dispatch{.kernarg_bytes = gemm.layout.explicit_size, .dynamic_lds = 163840 - 98304};
  EXPECT_TRUE(Succeeds(check_dispatch(gemm, device("gfx950"), dispatch)));
  dispatch.dynamic_lds += 1;
  EXPECT_TRUE(FailsWith(check_dispatch(gemm, device("gfx950"), dispatch), ErrorKind::LimitExceeded));
}

TEST(ValidateFixtures, ManyArgumentKindsInEveryCodeObjectVersion) {
  for (unsigned version : {4u, 5u, 6u}) {
    SCOPED_TRACE(version);
    auto read = read_fixture("check/kernel_args-cov" + std::to_string(version) + ".co");
    ASSERT_TRUE(read);
    const CodeObject& object = *read;
    EXPECT_EQ(object.target().code_object_version, version);
    EXPECT_TRUE(object.problems().empty()) << object.problems().front().message;
    EXPECT_TRUE(validate(object, device("gfx90a")).empty());
    ASSERT_EQ(object.kernels().size(), 1u);
    const Kernel& k = object.kernels()[0];
    EXPECT_EQ(k.name, "many_args");
    // in, out, Small, char, Wide, lookup, Vec4 (16-aligned), u64, short, double.
    EXPECT_EQ(k.layout.explicit_size, 104u);
    EXPECT_EQ(k.layout.hidden_offset, 104u);
    EXPECT_EQ(k.layout.segment_size, k.kernarg_segment_size);
    bool dynamic_lds_size = std::any_of(k.args.begin(), k.args.end(), [](const KernelArg& a) {
      return a.kind == ValueKind::HiddenDynamicLdsSize;
    });
    EXPECT_EQ(dynamic_lds_size, version >= 5);

    Device gfx90a = device("gfx90a");
    EXPECT_TRUE(Succeeds(check_dispatch(k, gfx90a, {.kernarg_bytes = 104, .dynamic_lds = 65536})));
    EXPECT_TRUE(FailsWith(check_dispatch(k, gfx90a, {.kernarg_bytes = 103}), ErrorKind::SizeMismatch));
    EXPECT_TRUE(FailsWith(check_dispatch(k, gfx90a, {.kernarg_bytes = 105}), ErrorKind::SizeMismatch));
    EXPECT_TRUE(
        FailsWith(check_dispatch(k, gfx90a, {.kernarg_bytes = 104, .dynamic_lds = 65537}), ErrorKind::LimitExceeded));
    EXPECT_TRUE(FailsWith(check_dispatch(k, gfx90a, {.kernarg_bytes = 104, .workgroup_size = {1025, 1, 1}}),
                          ErrorKind::InvalidArgument));
  }
}

TEST(ValidateFixtures, CodeObjectV6OnARuntimeThatStopsAtV5) {
  auto object = read_fixture("check/kernel_args-cov6.co");
  ASSERT_TRUE(object);
  auto violations = validate(*object, device("gfx90a", with_versions({4, 5})));
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].kind, ErrorKind::UnsupportedVersion);
  EXPECT_EQ(violations[0].field, "code_object_version");
}

}  // namespace
}  // namespace coload
