// Internal: the metadata-note half of the same-ISA retarget (retarget.cpp),
// exposed so tests can drive string lengths no real same-ISA pair produces.
// Does not cover: e_flags, the pair rules, reading back (retarget_code_object).
// Thread safety: a pure function of its arguments.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "coload/error.h"

namespace coload::detail {

/// Sets the `amdhsa.target` string of the NT_AMDGPU_METADATA note of `elf`
/// (a whole code object) to `text`, in place: the note is found by walking
/// the PT_NOTE segments and SHT_NOTE sections by their declared sizes, the
/// string by decoding the metadata (decode_metadata). A string of another length is
/// re-encoded and descsz updated only when the descriptor stays within its
/// old padding in every region that holds it (the next record does not
/// move); the string's msgpack head may widen (fixstr to str8, ...) to get
/// there. Returns false, changing nothing, when the map has no
/// `amdhsa.target`. Errors: UnsupportedMethod when the new descriptor does
/// not fit ("retargeted metadata note needs N bytes, the note has M"),
/// NotFound without a metadata note, Truncated / OutOfBounds / Malformed for
/// ELF tables or note records that do not walk, decode_metadata's errors
/// ("retarget: ...") for metadata it refuses (`elf` is unchanged then).
Expected<bool> rewrite_metadata_target(std::vector<std::byte>& elf, std::string_view text);

}  // namespace coload::detail
