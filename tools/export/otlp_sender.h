// OTLP/HTTP delivery for `hangwatch export`: one POST per request body to URL/v1/logs, through
// libcurl, with a timeout per attempt and retries with exponential backoff on the statuses OTLP
// calls retryable (429, 502, 503, 504), honouring the server's Retry-After.
//
// libcurl is loaded with dlopen (libcurl.so.4, Debian libcurl4) when the first sender is made,
// not linked: the `hangwatch` CLI is a static executable (tools/static_link.cmake), and libcurl's
// static archive needs a dozen libraries that have none (nghttp2, ssh2, krb5, ldap...); linking
// them shared would make every subcommand load them at start-up, for one subcommand's sake.
#ifndef HANGWATCH_TOOLS_OTLP_SENDER_H_
#define HANGWATCH_TOOLS_OTLP_SENDER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hangwatch::tools {

struct OtlpSenderOptions {
  std::string endpoint;  // the base URL; requests go to endpoint + "/v1/logs"
  std::string content_type = "application/json";
  std::vector<std::string> headers;  // "Name: value"
  long timeout_ms = 10000;           // per attempt, connecting included
  int max_retries = 5;               // retries after the first attempt
  long initial_backoff_ms = 500;     // doubled after each retry
  long max_backoff_ms = 30000;       // the longest wait; a longer Retry-After gives up
  // Called before each wait, with the status that caused it and the wait (for a note on stderr).
  std::function<void(long status, std::chrono::milliseconds wait)> on_retry;
};

// The outcome of one delivery.
struct OtlpDelivery {
  int attempts = 0;
  long status = 0;       // the last HTTP status; 0 when no answer came
  long rejected = 0;     // partialSuccess.rejectedLogRecords of a 200 answer (JSON answers only)
  std::string response;  // the last answer's body
};

// The seconds or HTTP-date of a Retry-After header value, as a wait from `now` (0 for a date in
// the past); -1 when it is neither.
long ParseRetryAfterMs(const std::string& value, std::chrono::system_clock::time_point now);

class OtlpSender {
 public:
  // Fails when libcurl cannot be loaded or the endpoint is not an http(s) URL.
  static absl::StatusOr<std::unique_ptr<OtlpSender>> Create(OtlpSenderOptions options);
  ~OtlpSender();
  OtlpSender(const OtlpSender&) = delete;
  OtlpSender& operator=(const OtlpSender&) = delete;

  // POSTs `body`, retrying as above. Ok once the server accepted it (2xx). Otherwise one line
  // saying why: "connection refused", "HTTP 400: ...", "HTTP 503 after 6 attempts", ...
  absl::Status Send(const std::string& body, OtlpDelivery* delivery);

  const std::string& url() const { return url_; }

 private:
  explicit OtlpSender(OtlpSenderOptions options);
  OtlpSenderOptions options_;
  std::string url_;
  void* curl_ = nullptr;     // CURL*
  void* headers_ = nullptr;  // curl_slist*
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_OTLP_SENDER_H_
