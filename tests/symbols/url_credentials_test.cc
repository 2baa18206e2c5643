// RedactUrlCredentials: the user information of every URL in a message becomes "***"; nothing
// else changes.
#include "symbols/url_credentials.h"

#include <gtest/gtest.h>

namespace hangwatch::symbols {
namespace {

TEST(RedactUrlCredentials, UserAndPasswordOfEveryUrlBecomeStars) {
  EXPECT_EQ(RedactUrlCredentials("https://user:pw@host:8080/v1/logs"),
            "https://***@host:8080/v1/logs");
  EXPECT_EQ(RedactUrlCredentials("http://token@host"), "http://***@host");
  // A password with '@' in it: everything before the last '@' of the host part.
  EXPECT_EQ(RedactUrlCredentials("http://u:p@ss@host/x@y"), "http://***@host/x@y");
  EXPECT_EQ(RedactUrlCredentials("cannot deliver to http://a:b@h1/v1/logs: HTTP 401; then "
                                 "'https://c:d@h2' failed"),
            "cannot deliver to http://***@h1/v1/logs: HTTP 401; then 'https://***@h2' failed");
  EXPECT_EQ(RedactUrlCredentials("http://a:b@h1 http://c@h2?q=x@y"),
            "http://***@h1 http://***@h2?q=x@y");
}

TEST(RedactUrlCredentials, TextWithoutCredentialsIsUnchanged) {
  for (const char* s : {"", "plain", "https://host/path@x", "http://host:4318", "mail me@host",
                        "://", "x://@", "ends with ://"}) {
    const std::string expected = std::string(s) == "x://@" ? "x://***@" : s;
    EXPECT_EQ(RedactUrlCredentials(s), expected) << s;
  }
}

}  // namespace
}  // namespace hangwatch::symbols
