// A kpack archive's code objects (kpack_archive.h): blobs viewed in place,
// zstd frames found by walking their size words on demand and decoded one
// at a time, each checked against the target the TOC files it under.
#include "coload/detail/kpack_archive.h"

#include <zstd.h>

#include <memory>

#include "coload/target.h"
#include "common/bytes.h"
#include "common/magic.h"
#include "common/try.h"

namespace coload::detail::kpack {

namespace {

struct FreeDctx {
  void operator()(ZSTD_DCtx* context) const { ZSTD_freeDCtx(context); }
};
using Dctx = std::unique_ptr<ZSTD_DCtx, FreeDctx>;

/// This thread's decoder, reset for each frame: making one per frame (its
/// tables, its window) cost more than decoding a typical code object.
ZSTD_DCtx* thread_dctx() {
  thread_local Dctx context(ZSTD_createDCtx());
  if (context) ZSTD_DCtx_reset(context.get(), ZSTD_reset_session_and_parameters);
  return context.get();
}

Error at_entry(Error error, const Entry& entry) { return std::move(error).at_field(entry.field, entry.toc_offset); }

Error zstd_error(const Entry& entry, std::size_t code) {
  return at_entry(Error(ErrorKind::CorruptData, entry.field + ": zstd frame: " + ZSTD_getErrorName(code)), entry);
}

/// Whether the ELF header of `code` declares the target the TOC files it
/// under: the same processor, and each feature the TOC names On or Off the
/// same (code object v3 headers state features the ID may leave open).
Expected<void> check_target(const Entry& entry, Bytes code) {
  if (entry.target == "amdgcnspirv") return {};  // SPIR-V: no ELF header to agree
  auto filed = TargetId::parse(entry.target);
  if (!filed) return {};  // an ID selection cannot read is a reason in its report
  auto declared = read_code_object_target(code);
  if (!declared) {
    return at_entry(std::move(declared).error().with_context(entry.field + ": its code object"), entry);
  }
  const TargetId& elf = declared->target;
  auto agrees = [](FeatureState toc, FeatureState header) {
    return (toc != FeatureState::On && toc != FeatureState::Off) || toc == header;
  };
  if (elf.processor != filed->processor || !agrees(filed->xnack, elf.xnack) || !agrees(filed->sramecc, elf.sramecc)) {
    return at_entry(
        Error(ErrorKind::Malformed, entry.field + ": the code object's ELF header declares " + elf.str() +
                                        " (e_flags " + hex(declared->e_flags) + "), not " + std::string(entry.target)),
        entry);
  }
  return {};
}

}  // namespace

std::string_view to_string(Scheme scheme) {
  switch (scheme) {
    case Scheme::None: return "none";
    case Scheme::ZstdPerKernel: return "zstd-per-kernel";
  }
  return "unknown";
}

Expected<Archive::Stored> Archive::frame(std::uint32_t ordinal) const {
  std::lock_guard lock(frames_mutex_);
  const std::uint64_t end = zstd_region_.offset + zstd_region_.size;
  std::vector<std::byte> scratch;
  while (frames_.size() <= ordinal) {
    const std::size_t index = frames_.size();
    auto word = file_.read(next_frame_, std::min<std::uint64_t>(4, end - next_frame_), scratch);
    COLOAD_RETURN_IF_ERROR(word);
    if (word->size() < 4) {
      return Error(ErrorKind::Truncated, "zstd frame " + std::to_string(index) + "'s size word at " + hex(next_frame_) +
                                             " passes the zstd region's end " + hex(end))
          .at_field("zstd_frame_size", next_frame_, word->size(), 4);
    }
    const std::uint64_t size = load_le<std::uint32_t>(word->data());
    const std::uint64_t start = next_frame_ + 4;
    if (size > end - start) {
      return Error(ErrorKind::OutOfBounds, "zstd frame " + std::to_string(index) + " of " + hex(size) + " bytes at " +
                                               hex(start) + " passes the zstd region's end " + hex(end))
          .at_field("zstd_frame_size", next_frame_, size, end - start);
    }
    frames_.push_back({start, size});
    next_frame_ = start + size;
  }
  return frames_[ordinal];
}

Expected<Archive::Stored> Archive::stored(const Entry& entry) const {
  if (scheme_ == Scheme::None) return blobs_[entry.ordinal];  // checked in range by parse
  auto found = frame(entry.ordinal);
  if (!found) return at_entry(std::move(found).error(), entry);
  return found;
}

Expected<std::span<const std::byte>> Archive::bytes(const Entry& entry, std::vector<std::byte>& out) const {
  auto where = stored(entry);
  COLOAD_RETURN_IF_ERROR(where);
  Bytes code = file_.bytes().subspan(where->offset, where->size);
  if (scheme_ == Scheme::ZstdPerKernel) {
    const Bytes frame = code;
    const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR) {
      return at_entry(Error(ErrorKind::CorruptData,
                            entry.field + ": zstd frame at " + hex(where->offset) + " has no valid frame header"),
                      entry);
    }
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != entry.original_size) {
      return at_entry(Error(ErrorKind::SizeMismatch, entry.field + ": zstd frame declares " + hex(declared) +
                                                         " bytes, original_size is " + hex(entry.original_size))
                          .at_field(entry.field + ".original_size", entry.toc_offset, declared, entry.original_size),
                      entry);
    }
    out.resize(entry.original_size);  // at most max_decompressed_bytes (parse)
    ZSTD_DCtx* context = thread_dctx();
    if (!context) return Error(ErrorKind::LimitExceeded, "out of memory for a zstd decoder");
    const std::size_t made = ZSTD_decompressDCtx(context, out.data(), out.size(), frame.data(), frame.size());
    if (ZSTD_isError(made)) return zstd_error(entry, made);
    if (made != entry.original_size) {
      return at_entry(Error(ErrorKind::SizeMismatch, entry.field + ": zstd frame decodes to " + hex(made) +
                                                         " bytes, original_size is " + hex(entry.original_size))
                          .at_field(entry.field + ".original_size", entry.toc_offset, made, entry.original_size),
                      entry);
    }
    code = out;
  }
  COLOAD_RETURN_IF_ERROR(check_target(entry, code));
  return code;
}

Expected<std::span<const std::byte>> Archive::head(const Entry& entry, std::size_t n,
                                                   std::vector<std::byte>& out) const {
  auto where = stored(entry);
  COLOAD_RETURN_IF_ERROR(where);
  const Bytes stored_bytes = file_.bytes().subspan(where->offset, where->size);
  const std::size_t wanted = static_cast<std::size_t>(std::min<std::uint64_t>(n, entry.original_size));
  if (scheme_ == Scheme::None) return stored_bytes.first(std::min<std::size_t>(wanted, stored_bytes.size()));
  out.resize(wanted);
  ZSTD_DCtx* context = thread_dctx();
  if (!context) return Error(ErrorKind::LimitExceeded, "out of memory for a zstd decoder");
  ZSTD_inBuffer in{stored_bytes.data(), stored_bytes.size(), 0};
  ZSTD_outBuffer head{out.data(), out.size(), 0};
  while (head.pos < head.size) {
    const std::size_t read_before = in.pos, made_before = head.pos;
    const std::size_t left = ZSTD_decompressStream(context, &head, &in);
    if (ZSTD_isError(left)) return zstd_error(entry, left);
    if (left == 0 || (in.pos == read_before && head.pos == made_before)) break;  // the frame, or its bytes, ended
  }
  if (head.pos < head.size) {
    return at_entry(Error(ErrorKind::SizeMismatch, entry.field + ": zstd frame ends after " + hex(head.pos) +
                                                       " bytes, original_size is " + hex(entry.original_size)),
                    entry);
  }
  return std::span<const std::byte>(out);
}

Expected<std::vector<Archive::Stored>> stored_members(const Members& members) {
  std::vector<Archive::Stored> stored;
  stored.reserve(members.members.size());
  for (std::size_t e = 0; e < members.members.size(); ++e) {
    const Member& member = members.members[e];
    auto where = member.file->archive->stored(member.toc());
    if (!where) return std::move(where).error().at_entry(e, member.toc().id);
    stored.push_back(*where);
  }
  return stored;
}

}  // namespace coload::detail::kpack
