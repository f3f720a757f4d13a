// A minimal streaming JSON writer for the CLI's --json output: objects,
// arrays, strings (escaped), integers, booleans and null. Commas are placed
// automatically; the caller keeps keys and values balanced.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coload::cli {

class JsonWriter {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view name);
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(std::uint64_t number);
  void value(bool flag);
  void null();

  const std::string& text() const { return out_; }

 private:
  void separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

}  // namespace coload::cli
