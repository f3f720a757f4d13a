// Internal: a bundle entry ID parsed without copying it, for the selector,
// which parses the ID of every entry of every bundle it is shown.
#pragma once

#include <optional>
#include <string_view>

#include "coload/target.h"

namespace coload::detail {

/// EntryId's fields as views of the parsed text (which must outlive it).
struct EntryIdView {
  std::string_view text;
  OffloadKind kind = OffloadKind::Other;
  std::string_view kind_text, arch, vendor, os, environment, target_text;
  std::optional<TargetId> target;
  bool is_spirv = false;

  bool is_amdhsa() const;
};

/// EntryId::parse's rules and errors, exactly; EntryId::parse copies its result.
Expected<EntryIdView> parse_entry_id(std::string_view text);

}  // namespace coload::detail
