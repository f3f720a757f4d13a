// validate() on code objects built in the test, each check with its exact
// kind, field, value and limit (kernarg layouts and check_dispatch() are in
// kernarg_layout_test.cpp). The toolchain-built fixtures run end to end at
// the bottom.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "code_object/kernarg_layout.h"
#include "coload/validate.h"
#include "test_util.h"
#include "validate_test_support.h"

namespace coload {
namespace {

using namespace coload::testing;
using validate_test::code_object;
using validate_test::device;
using validate_test::fields;
using validate_test::kernel;
using validate_test::of_field;
using validate_test::ptr;
using validate_test::value;
using validate_test::with_lds;
using validate_test::with_versions;

// ---------------------------------------------------------------------------
// validate(): object-wide checks.

TEST(Validate, NativeObjectThatFitsHasNoViolations) {
  Kernel k = kernel("gemm", 16, {ptr(0), ptr(8)});
  k.group_segment_fixed_size = 65536;
  EXPECT_TRUE(validate(code_object("gfx942", {k}), device("gfx942")).empty());
}

TEST(Validate, CodeObjectVersionTheRuntimeDoesNotLoad) {
  auto violations = validate(code_object("gfx90a", {}, 6), device("gfx90a", with_versions({4, 5})));
  ASSERT_EQ(violations.size(), 1u);
  const Violation& v = violations[0];
  EXPECT_EQ(v.kind, ErrorKind::UnsupportedVersion);
  EXPECT_EQ(v.kernel, "");
  EXPECT_EQ(v.field, "code_object_version");
  EXPECT_EQ(v.value, 6u);
  EXPECT_EQ(v.limit, 5u);
  EXPECT_EQ(v.message,
            "code_object_version 6 is not one coload offers to the runtime of gfx90a:sramecc+:xnack- (versions 4, 5)");
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
  lds = of_field(validate(code_object("gfx942", {k}), device("gfx942", with_lds(32768))), "group_segment_fixed_size");
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
  auto violations = validate(code_object("gfx950", {a, b}, 6), device("gfx942", with_versions({4, 5})));
  EXPECT_EQ(fields(violations),
            "code_object_version target wavefront_size group_segment_fixed_size max_flat_workgroup_size");
  EXPECT_EQ(violations[2].kernel, "a");
  EXPECT_EQ(violations[3].kernel, "b");
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
    bool dynamic_lds_size = std::any_of(k.args.begin(), k.args.end(),
                                        [](const KernelArg& a) { return a.kind == ValueKind::HiddenDynamicLdsSize; });
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
