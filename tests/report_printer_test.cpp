// The CLI's report printer (tools/coload/report_printer.cpp): one sequence of
// calls gives the JSON document and the text report, and the text lines'
// {key} rules (hex, columns, words for a true value, "-" for null, an array
// of values joined by commas, the last value under a key).
#include "report_printer.h"

#include <gtest/gtest.h>

#include <string>

namespace coload::cli {
namespace {

/// A small report as a command writes it: facts, then the text lines naming them.
void write_sample(ReportPrinter& out) {
  out.begin_object();
  out.field("file", "a.so");
  out.begin_array("versions");
  out.field("", std::uint64_t{4});
  out.field("", std::uint64_t{5});
  out.end_array();
  out.text("{file}: v{versions}\n");
  out.begin_array("bundles");
  for (std::uint64_t index : {0, 1}) {
    out.begin_object();
    out.field("index", index);
    out.field("offset", std::uint64_t{0x1000} * (index + 1));
    out.field("plain", index == 0);
    if (index == 0)
      out.null("tier");
    else
      out.field("tier", "native");
    out.text_field("position", index + 7);  // the text's only
    out.text("[{position}] {tier:8}|offset {offset:x}{plain? (plain)}\n");
    out.end_object();
  }
  out.end_array();
  out.end_object();
  out.finish();
}

TEST(ReportPrinter, TextFillsEachLineFromTheFacts) {
  testing::internal::CaptureStdout();
  write_sample(*make_report_printer(false));
  EXPECT_EQ(testing::internal::GetCapturedStdout(),
            "a.so: v4,5\n"
            "[7] -       |offset 0x1000 (plain)\n"
            "[8] native  |offset 0x2000\n");
}

TEST(ReportPrinter, JsonHoldsEveryFactAndNoTextOnlyOne) {
  testing::internal::CaptureStdout();
  write_sample(*make_report_printer(true));
  EXPECT_EQ(testing::internal::GetCapturedStdout(),
            R"({"file":"a.so","versions":[4,5],"bundles":[{"index":0,"offset":4096,"plain":true,"tier":null},)"
            R"({"index":1,"offset":8192,"plain":false,"tier":"native"}]})"
            "\n");
}

TEST(ReportPrinter, EndingEarlyKeepsTheTextAndDropsTheDocument) {
  for (bool json : {false, true}) {
    testing::internal::CaptureStdout();
    {
      auto out = make_report_printer(json);
      out->begin_object();
      out->field("device", "gfx90a");
      out->text("device {device}\n");
      out->end_early();
    }
    EXPECT_EQ(testing::internal::GetCapturedStdout(), json ? "" : "device gfx90a\n");
  }
}

TEST(ReportPrinter, CountsSpellTheirNoun) {
  EXPECT_EQ(count_of(1, "bundle"), "1 bundle");
  EXPECT_EQ(count_of(0, "bundle"), "0 bundles");
  EXPECT_EQ(count_of(3, "code object"), "3 code objects");
}

}  // namespace
}  // namespace coload::cli
