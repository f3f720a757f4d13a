// Test support for the validate() and kernarg layout tests (validate_test.cpp,
// kernarg_layout_test.cpp): kernels, arguments, devices and code objects
// built in the test, and lookups of the violations of one field.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "code_object/kernarg_layout.h"
#include "coload/validate.h"
#include "test_util.h"

namespace coload::validate_test {

using testing::Succeeds;

inline KernelArg arg(std::uint32_t offset, std::uint32_t size, ValueKind kind, std::string kind_text,
                     std::string name = "") {
  KernelArg result;
  result.name = std::move(name);
  result.offset = offset;
  result.size = size;
  result.kind = kind;
  result.kind_text = std::move(kind_text);
  return result;
}
inline KernelArg ptr(std::uint32_t offset, std::string name = "") {
  return arg(offset, 8, ValueKind::GlobalBuffer, "global_buffer", std::move(name));
}
inline KernelArg value(std::uint32_t offset, std::uint32_t size, std::string name = "") {
  return arg(offset, size, ValueKind::ByValue, "by_value", std::move(name));
}
inline KernelArg hidden(std::uint32_t offset, std::uint32_t size, ValueKind kind, std::string kind_text) {
  return arg(offset, size, kind, std::move(kind_text));
}

// A wave64 kernel that fits every gfx9 device; its layout computed.
inline Kernel kernel(std::string name, std::uint32_t segment_size, std::vector<KernelArg> args,
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

inline std::vector<Problem> problems_of(const Kernel& k) {
  std::vector<Problem> problems;
  detail::kernarg_layout(k, problems);
  return problems;
}

inline DeviceOverrides with_lds(std::uint64_t bytes) {
  DeviceOverrides overrides;
  overrides.lds_bytes = bytes;
  return overrides;
}
inline DeviceOverrides with_versions(std::vector<unsigned> versions) {
  DeviceOverrides overrides;
  overrides.code_object_versions = std::move(versions);
  return overrides;
}

inline Device device(std::string_view spec, DeviceOverrides overrides = {}) {
  auto result = device_from_spec(spec, overrides);
  EXPECT_TRUE(Succeeds(result)) << spec;
  return *result;
}

inline CodeObject code_object(std::string_view target, std::vector<Kernel> kernels, unsigned version = 5,
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
inline std::vector<Violation> of_field(const std::vector<Violation>& all, std::string_view field) {
  std::vector<Violation> result;
  for (const Violation& v : all) {
    if (v.field == field) result.push_back(v);
  }
  return result;
}

inline std::string fields(const std::vector<Violation>& all) {
  std::string text;
  for (const Violation& v : all) text += (text.empty() ? "" : " ") + v.field;
  return text;
}

}  // namespace coload::validate_test
