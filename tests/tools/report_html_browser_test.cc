// The HTML report in headless Chromium: written by the test (see report_html_test.cc for the
// page's structure), driven by tests/tools/html/browser_check.js.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
