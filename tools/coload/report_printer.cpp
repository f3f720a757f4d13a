#include "report_printer.h"

#include <charconv>
#include <cstdio>
#include <vector>

#include "json_writer.h"

namespace coload::cli {
namespace {

/// The JSON document, kept whole and printed by finish(): a report that
/// fails half-way (a command's budget) prints none.
class JsonReport final : public ReportPrinter {
 public:
  void begin_object(std::string_view key) override {
    put_key(key);
    json_.begin_object();
  }
  void end_object() override { json_.end_object(); }
  void begin_array(std::string_view key) override {
    put_key(key);
    json_.begin_array();
  }
  void end_array() override { json_.end_array(); }
  void field(std::string_view key, std::string_view value) override {
    put_key(key);
    json_.value(value);
  }
  void field(std::string_view key, std::uint64_t value) override {
    put_key(key);
    json_.value(value);
  }
  void field(std::string_view key, bool value) override {
    put_key(key);
    json_.value(value);
  }
  void null(std::string_view key) override {
    put_key(key);
    json_.null();
  }
  void text_field(std::string_view, std::string_view) override {}
  void text_field(std::string_view, std::uint64_t) override {}
  void text(std::string_view) override {}
  void finish() override {
    if (!json_.text().empty()) std::printf("%s\n", json_.text().c_str());
  }
  void end_early() override {}

 private:
  void put_key(std::string_view key) {
    if (!key.empty()) json_.key(key);
  }
  JsonWriter json_;
};

/// The text report, written through a 16 KiB buffer as the command goes: an
/// image of 128 bundles is a `select` report of 1 000+ lines, and printf's
/// formatting of each line was a tenth of the command.
class TextReport final : public ReportPrinter {
 public:
  TextReport() { out_.reserve(kFlushAt + 1024); }
  TextReport(const TextReport&) = delete;
  TextReport& operator=(const TextReport&) = delete;
  ~TextReport() override { flush(); }

  void begin_object(std::string_view) override { open_.push_back({}); }
  void end_object() override { open_.pop_back(); }
  void begin_array(std::string_view key) override {
    open_.push_back(key);
    if (!key.empty()) set(key, Kind::Text).text.clear();
  }
  void end_array() override { open_.pop_back(); }
  void field(std::string_view key, std::string_view value) override {
    set(key, Kind::Text).text.assign(value);
    join(value);
  }
  void field(std::string_view key, std::uint64_t value) override {
    set(key, Kind::Number).number = value;
    char digits[24];
    join({digits, std::to_chars(digits, digits + sizeof digits, value).ptr});
  }
  void field(std::string_view key, bool value) override { set(key, value ? Kind::True : Kind::False); }
  void null(std::string_view key) override { set(key, Kind::Null); }
  void text_field(std::string_view key, std::string_view value) override { set(key, Kind::Text).text.assign(value); }
  void text_field(std::string_view key, std::uint64_t value) override { set(key, Kind::Number).number = value; }
  void text(std::string_view line) override;
  void finish() override { flush(); }
  void end_early() override { flush(); }

 private:
  static constexpr std::size_t kFlushAt = 16 * 1024;
  enum class Kind : std::uint8_t { Text, Number, True, False, Null };
  /// The value last written under a key. Few keys recur, so a short list
  /// searched in order is enough, and each value's storage is reused.
  struct Value {
    std::string key;
    Kind kind = Kind::Null;
    std::string text;
    std::uint64_t number = 0;
  };

  Value& set(std::string_view key, Kind kind) {
    Value* value = find(key);
    if (!value) value = &values_.emplace_back(Value{.key = std::string(key)});
    value->kind = kind;
    return *value;
  }
  Value* find(std::string_view key) {
    for (Value& value : values_) {
      if (value.key == key) return &value;
    }
    return nullptr;
  }
  /// An element of an array of values joins its array's text value.
  void join(std::string_view element) {
    if (open_.empty() || open_.back().empty()) return;
    std::string& joined = find(open_.back())->text;
    if (!joined.empty()) joined += ',';
    joined.append(element);
  }
  void put(std::string_view text) {
    out_.append(text);
    if (out_.size() >= kFlushAt) flush();
  }
  void put_value(const Value& value, std::string_view spec);
  void flush() {
    std::fwrite(out_.data(), 1, out_.size(), stdout);
    out_.clear();
  }

  std::string out_;
  std::vector<Value> values_;
  /// The open objects (an empty key) and arrays (their keys, literals in the commands).
  std::vector<std::string_view> open_;
};

void TextReport::text(std::string_view line) {
  std::size_t at = 0;
  while (at < line.size()) {
    std::size_t open = line.find('{', at);
    if (open == std::string_view::npos) break;
    std::size_t close = line.find('}', open);
    if (close == std::string_view::npos) break;  // not a placeholder: written as it is
    put(line.substr(at, open - at));
    std::string_view name = line.substr(open + 1, close - open - 1);
    std::string_view spec;
    if (std::size_t mark = name.find_first_of(":?"); mark != std::string_view::npos) {
      spec = name.substr(mark);
      name = name.substr(0, mark);
    }
    if (const Value* value = find(name)) put_value(*value, spec);
    at = close + 1;
  }
  put(line.substr(at));
}

void TextReport::put_value(const Value& value, std::string_view spec) {
  if (!spec.empty() && spec.front() == '?') {
    if (value.kind == Kind::True) put(spec.substr(1));
    return;
  }
  char number[24];
  std::string_view shown;
  switch (value.kind) {
    case Kind::Text: shown = value.text; break;
    case Kind::Number:
      if (spec == ":x") {
        number[0] = '0';
        number[1] = 'x';
        shown = {number, std::to_chars(number + 2, number + sizeof number, value.number, 16).ptr};
      } else {
        shown = {number, std::to_chars(number, number + sizeof number, value.number).ptr};
      }
      break;
    case Kind::True: shown = "true"; break;
    case Kind::False: shown = "false"; break;
    case Kind::Null: shown = "-"; break;
  }
  put(shown);
  std::size_t width = 0;
  if (spec.size() > 1 && spec[1] >= '0' && spec[1] <= '9')
    std::from_chars(spec.data() + 1, spec.data() + spec.size(), width);
  if (shown.size() < width) out_.append(width - shown.size(), ' ');
}

}  // namespace

std::unique_ptr<ReportPrinter> make_report_printer(bool json) {
  if (json) return std::make_unique<JsonReport>();
  return std::make_unique<TextReport>();
}

std::string count_of(std::size_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

}  // namespace coload::cli
