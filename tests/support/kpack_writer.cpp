// Test-side kpack archive writer (kpack_writer.h).
#include "kpack_writer.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace coload::testing::kpack {

namespace {

constexpr std::uint64_t kBlobAlignment = 64;  // PackedKernelArchive.BLOB_ALIGNMENT

void append_le(std::vector<std::byte>& bytes, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes.push_back(static_cast<std::byte>(value >> (8 * i)));
}

void store_le(std::vector<std::byte>& bytes, std::size_t offset, std::uint64_t value, int width) {
  if (offset + width > bytes.size()) throw std::out_of_range("kpack_writer: store past the end");
  for (int i = 0; i < width; ++i) bytes[offset + i] = static_cast<std::byte>(value >> (8 * i));
}

std::vector<std::string> arches_of(std::span<const Object> objects) {
  std::vector<std::string> arches;
  for (const Object& object : objects) {
    if (std::find(arches.begin(), arches.end(), object.target) == arches.end()) arches.push_back(object.target);
  }
  return arches;
}

msgpack::Node entry_map(const Object& object, std::uint64_t ordinal) {
  auto entry = msgpack::Node::map({{"type", "hsaco"},
                                   {"ordinal", msgpack::Node(ordinal)},
                                   {"original_size", msgpack::Node(std::uint64_t{object.bytes.size()})}});
  if (object.metadata_target) {
    auto metadata = msgpack::Node::map({{"target", *object.metadata_target}});
    if (!object.source_prefix.empty()) metadata.add("source_prefix", object.source_prefix);
    entry.add("metadata", std::move(metadata));
  }
  return entry;
}

}  // namespace

std::string_view scheme_name(Scheme scheme) { return scheme == Scheme::None ? "none" : "zstd-per-kernel"; }

void put_u32(std::vector<std::byte>& bytes, std::size_t offset, std::uint32_t value) {
  store_le(bytes, offset, value, 4);
}
void put_u64(std::vector<std::byte>& bytes, std::size_t offset, std::uint64_t value) {
  store_le(bytes, offset, value, 8);
}

std::string target_of(std::string_view entry_id) {
  std::size_t dashes = entry_id.rfind("--");
  return std::string(dashes == std::string_view::npos ? entry_id : entry_id.substr(dashes + 2));
}

std::vector<std::byte> zstd_frame(std::span<const std::byte> bytes, int level) {
  std::vector<std::byte> frame(ZSTD_compressBound(bytes.size()));
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 0);
  const std::size_t made = ZSTD_compress2(context, frame.data(), frame.size(), bytes.data(), bytes.size());
  ZSTD_freeCCtx(context);
  if (ZSTD_isError(made)) throw std::runtime_error(std::string("kpack_writer: zstd: ") + ZSTD_getErrorName(made));
  frame.resize(made);
  return frame;
}

void Layout::fix_toc_offset() { put_u64(header, 8, toc_offset()); }

std::vector<std::byte> Layout::assemble() const {
  std::vector<std::byte> file = header;
  file.insert(file.end(), padding.begin(), padding.end());
  file.insert(file.end(), data.begin(), data.end());
  const std::vector<std::byte> map = toc.encode();
  file.insert(file.end(), map.begin(), map.end());
  file.insert(file.end(), trailing.begin(), trailing.end());
  return file;
}

Layout layout(std::span<const Object> objects, const Options& options) {
  Layout out;
  out.header = {std::byte{'K'}, std::byte{'P'}, std::byte{'A'}, std::byte{'K'}};
  append_le(out.header, 1, 4);
  append_le(out.header, 0, 8);
  out.padding.assign((kBlobAlignment - out.header.size() % kBlobAlignment) % kBlobAlignment, std::byte{0});
  const std::uint64_t base = out.data_offset();

  // toc: binary key -> target -> entry, both maps in first-add order.
  auto toc = msgpack::Node::map({});
  for (std::size_t ordinal = 0; ordinal < objects.size(); ++ordinal) {
    const Object& object = objects[ordinal];
    msgpack::Node& targets = toc[object.key];  // added at the end when new
    if (targets.kind() != msgpack::Node::Kind::Map) targets = msgpack::Node::map({});
    targets.add(object.target, entry_map(object, ordinal));
  }

  const std::vector<std::string> arches = options.gfx_arches.value_or(arches_of(objects));
  std::vector<msgpack::Node> arch_nodes(arches.begin(), arches.end());
  out.toc = msgpack::Node::map({});
  out.toc.add("format_version", 1);
  out.toc.add("group_name", options.group_name);
  out.toc.add("gfx_arch_family", options.gfx_arch_family.value_or(arches.size() == 1 ? arches[0] : "mixed"));
  out.toc.add("gfx_arches", msgpack::Node::array(std::move(arch_nodes)));
  out.toc.add("toc", std::move(toc));
  out.toc.add("compression_scheme", std::string(scheme_name(options.scheme)));

  if (options.scheme == Scheme::None) {
    std::vector<msgpack::Node> blobs;
    for (const Object& object : objects) {
      const std::uint64_t offset = base + out.data.size();
      out.data.insert(out.data.end(), object.bytes.begin(), object.bytes.end());
      out.stored.push_back({offset, object.bytes.size()});
      blobs.push_back(msgpack::Node::map(
          {{"offset", msgpack::Node(offset)}, {"size", msgpack::Node(std::uint64_t{object.bytes.size()})}}));
    }
    out.toc.add("blobs", msgpack::Node::array(std::move(blobs)));
  } else {
    append_le(out.data, objects.size(), 4);
    for (const Object& object : objects) {
      const std::vector<std::byte> frame = zstd_frame(object.bytes, options.zstd_level);
      append_le(out.data, frame.size(), 4);
      out.stored.push_back({base + out.data.size(), frame.size()});
      out.data.insert(out.data.end(), frame.begin(), frame.end());
    }
    out.toc.add("zstd_offset", msgpack::Node(base));
    out.toc.add("zstd_size", msgpack::Node(std::uint64_t{out.data.size()}));
  }
  out.fix_toc_offset();
  return out;
}

std::vector<std::byte> write(std::span<const Object> objects, const Options& options) {
  return layout(objects, options).assemble();
}

}  // namespace coload::testing::kpack
