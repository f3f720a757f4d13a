// The one way a command writes its report: each fact once, through
// ReportPrinter, whose back end is the text report or the --json document
// (docs/cli-json.md). So the two cannot drift: the JSON document holds every
// fact, and the text lines can only name facts the command wrote.
//
// The text report is not a generic rendering of the document: its lines have
// their own order and wording (kept byte for byte). A command therefore
// writes its facts in the document's order, then a text line that names
// them: "bundle {index}: offset {offset:x}", filled by the text back end
// from the facts last written under those keys; the JSON back end ignores
// the line. A fact only the text shows (a count, a position in a table)
// is a text_field, which the JSON back end ignores.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace coload::cli {

/// Writes one report, as text or as one JSON document. Not thread-safe.
class ReportPrinter {
 public:
  virtual ~ReportPrinter() = default;

  /// JSON structure. `key` is empty for the document itself or an array's
  /// element. The text back end keeps no structure, except that an array of
  /// values is one text value: its values joined by commas, under the
  /// array's key.
  virtual void begin_object(std::string_view key = {}) = 0;
  virtual void end_object() = 0;
  virtual void begin_array(std::string_view key = {}) = 0;
  virtual void end_array() = 0;

  /// A fact: a member of the current JSON object (an array's element when
  /// `key` is empty), and a value the text lines can name by `key`.
  virtual void field(std::string_view key, std::string_view value) = 0;
  virtual void field(std::string_view key, std::uint64_t value) = 0;
  virtual void field(std::string_view key, bool value) = 0;
  /// JSON null; shown as "-" in text.
  virtual void null(std::string_view key) = 0;

  void field(std::string_view key, const char* value) { field(key, std::string_view(value)); }
  void field(std::string_view key, const std::string& value) { field(key, std::string_view(value)); }
  /// A narrower unsigned number.
  template <class T>
    requires(std::is_unsigned_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, std::uint64_t>)
  void field(std::string_view key, T value) {
    field(key, static_cast<std::uint64_t>(value));
  }
  /// A value, or null when there is none.
  template <class T>
  void field(std::string_view key, const std::optional<T>& value) {
    if (value)
      field(key, *value);
    else
      null(key);
  }

  /// A value only the text report shows; the JSON back end ignores it.
  virtual void text_field(std::string_view key, std::string_view value) = 0;
  virtual void text_field(std::string_view key, std::uint64_t value) = 0;

  /// Text only: writes `line` with each {key} replaced by the value last
  /// written under `key`. {key:x} writes a number as 0x-prefixed hex,
  /// {key:N} pads the value to N columns (left-aligned), {key?words} writes
  /// `words` when the value is true. The JSON back end ignores it.
  virtual void text(std::string_view line) = 0;

  /// The report is complete: the text is flushed to stdout; the JSON
  /// document, when anything was written, is printed on one line.
  virtual void finish() = 0;
  /// The report stops short: the text written so far is flushed; the
  /// unfinished JSON document is dropped.
  virtual void end_early() = 0;
};

/// The --json back end when `json`, the text back end otherwise.
std::unique_ptr<ReportPrinter> make_report_printer(bool json);

/// "1 bundle", "3 bundles": a count the text report spells out.
std::string count_of(std::size_t count, std::string_view noun);

}  // namespace coload::cli
