// Test support for the metadata decoder's tests (metadata_test.cpp,
// metadata_strict_test.cpp): documents built with the test-side msgpack
// writer, decoding them, and the assertion that an error lies at its key path
// and a byte offset.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "code_object/metadata.h"
#include "support/msgpack_writer.h"
#include "test_util.h"

namespace coload::metadata_test {

using detail::decode_metadata;
using detail::DecodedMetadata;
using testing::FailsWith;
using testing::msgpack::Node;
using testing::msgpack::Writer;

inline Expected<DecodedMetadata> decode(const std::vector<std::byte>& bytes) { return decode_metadata(bytes); }
inline Expected<DecodedMetadata> decode(const Node& document) { return decode(document.encode()); }

/// Fails with exactly `kind` at the key path `path` (the root map is
/// "metadata"), at some byte offset, with exactly `value` and `limit` (nullopt:
/// unset) as the error's location says.
inline ::testing::AssertionResult FailsAtPath(const Expected<DecodedMetadata>& result, ErrorKind kind,
                                              std::string_view path, std::optional<std::uint64_t> value = std::nullopt,
                                              std::optional<std::uint64_t> limit = std::nullopt) {
  auto failed = FailsWith(result, kind);
  if (!failed) return failed;
  const ErrorLocation& at = result.error().location();
  if (!at.offset) return ::testing::AssertionFailure() << "no byte offset (" << result.error().message() << ")";
  return testing::FailsAtField(result, kind, path, at.offset, value, limit);
}

inline Node arg(std::uint32_t offset, std::uint32_t size, const char* kind) {
  return Node::map({{".offset", offset}, {".size", size}, {".value_kind", kind}});
}

inline Node kernel(const std::string& name) {
  return Node::map({{".name", name},
                    {".symbol", name + ".kd"},
                    {".kernarg_segment_size", 16},
                    {".kernarg_segment_align", 8},
                    {".group_segment_fixed_size", 1024},
                    {".private_segment_fixed_size", 32},
                    {".wavefront_size", 64},
                    {".sgpr_count", 12},
                    {".vgpr_count", 5},
                    {".max_flat_workgroup_size", 256},
                    {".args", Node::array({arg(0, 8, "global_buffer"), arg(8, 4, "by_value")})}});
}

inline Node metadata(std::vector<Node> kernels) {
  return Node::map({{"amdhsa.version", Node::array({1, 2})},
                    {"amdhsa.target", "amdgcn-amd-amdhsa--gfx90a"},
                    {"amdhsa.kernels", Node::array(std::move(kernels))}});
}

inline Node one_kernel() { return metadata({kernel("k")}); }
inline Node& first_kernel(Node& document) { return document["amdhsa.kernels"][0]; }
inline Node& first_arg(Node& document) { return first_kernel(document)[".args"][0]; }

/// `count` containers nested in one another, the innermost empty.
inline Writer nested(std::size_t count, bool maps = false) {
  Writer out;
  for (std::size_t i = 0; i + 1 < count; ++i) {
    if (maps) {
      out.map(1).str("k");
    } else {
      out.array(1);
    }
  }
  if (maps) {
    out.map(0);
  } else {
    out.array(0);
  }
  return out;
}

}  // namespace coload::metadata_test
