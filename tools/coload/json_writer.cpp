#include "json_writer.h"

#include <cstdio>

namespace coload::cli {

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
}

void JsonWriter::end_object() {
  out_ += '}';
  first_.pop_back();
}

void JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
}

void JsonWriter::end_array() {
  out_ += ']';
  first_.pop_back();
}

void JsonWriter::key(std::string_view name) {
  value(name);
  out_ += ':';
  after_key_ = true;
}

namespace {

/// The length of the well-formed UTF-8 sequence at text[0] (Unicode, table
/// 3-7: no overlong forms, surrogates or code points past U+10FFFF), or 0.
std::size_t utf8_sequence(std::string_view text) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  std::size_t length = lead < 0xc2 ? 0 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : lead < 0xf5 ? 4 : 0;
  if (length == 0 || text.size() < length) return 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead == 0xe0) low = 0xa0;
  if (lead == 0xed) high = 0x9f;
  if (lead == 0xf0) low = 0x90;
  if (lead == 0xf4) high = 0x8f;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

}  // namespace

// Names are bytes (a file name, an entry ID); JSON text is Unicode. Valid
// UTF-8 is written as it is; each byte that is not part of a valid sequence
// is written as the lone surrogate U+DC80 + (byte - 0x80), "\udcXX": the
// surrogateescape rule of PEP 383, so the bytes can be restored
// (docs/cli-json.md, "Names that are not UTF-8").
void JsonWriter::value(std::string_view text) {
  separate();
  out_ += '"';
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      std::size_t length = utf8_sequence(text.substr(i));
      if (length == 0) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\udc%02x", static_cast<unsigned>(byte));
        out_ += escaped;
        i += 1;
      } else {
        out_.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\t': out_ += "\\t"; break;
      default:
        if (byte < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(byte));
          out_ += escaped;
        } else {
          out_ += c;
        }
    }
    ++i;
  }
  out_ += '"';
}

void JsonWriter::value(std::uint64_t number) {
  separate();
  out_ += std::to_string(number);
}

void JsonWriter::value(bool flag) {
  separate();
  out_ += flag ? "true" : "false";
}

void JsonWriter::null() {
  separate();
  out_ += "null";
}

}  // namespace coload::cli
