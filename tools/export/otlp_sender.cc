// OtlpSender: libcurl (dlopen), timeouts, retries with backoff and Retry-After.
#include "tools/export/otlp_sender.h"

#include <curl/curl.h>
#include <strings.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "nlohmann/json.hpp"
#include "symbols/shared_library.h"

namespace hangwatch::tools {
namespace {

// The libcurl functions the sender uses, from one dlopen for the whole process.
struct Libcurl {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
  std::string error;  // why it could not be loaded
};

const Libcurl& LoadLibcurl() {
  static const Libcurl* lib = [] {
    auto* l = new Libcurl;
    void* h = symbols::OpenSharedLibrary("libcurl.so.4", "libcurl4", &l->error);
    if (h == nullptr) return l;
    if (!symbols::LoadFunction(h, "curl_global_init", &l->global_init) ||
        !symbols::LoadFunction(h, "curl_easy_init", &l->easy_init) ||
        !symbols::LoadFunction(h, "curl_easy_setopt", &l->easy_setopt) ||
        !symbols::LoadFunction(h, "curl_easy_perform", &l->easy_perform) ||
        !symbols::LoadFunction(h, "curl_easy_getinfo", &l->easy_getinfo) ||
        !symbols::LoadFunction(h, "curl_easy_cleanup", &l->easy_cleanup) ||
        !symbols::LoadFunction(h, "curl_easy_strerror", &l->easy_strerror) ||
        !symbols::LoadFunction(h, "curl_slist_append", &l->slist_append) ||
        !symbols::LoadFunction(h, "curl_slist_free_all", &l->slist_free_all)) {
      l->error = "libcurl.so.4 lacks a function this build needs";
      return l;
    }
    if (l->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) l->error = "curl_global_init failed";
    return l;
  }();
  return *lib;
}

// What one attempt collects.
struct Exchange {
  std::string response;
  std::string retry_after;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* e = static_cast<Exchange*>(user);
  // The answer is for messages only: keep its beginning.
  if (e->response.size() < 64 * 1024) e->response.append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* e = static_cast<Exchange*>(user);
  std::string line(data, size * n);
  constexpr char kName[] = "retry-after:";
  if (line.size() > sizeof kName - 1 && strncasecmp(line.c_str(), kName, sizeof kName - 1) == 0) {
    std::string v = line.substr(sizeof kName - 1);
    const size_t b = v.find_first_not_of(" \t"), end = v.find_last_not_of(" \t\r\n");
    e->retry_after = b == std::string::npos ? "" : v.substr(b, end - b + 1);
  }
  return size * n;
}

bool Retryable(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// The first line of an error answer, short.
std::string Excerpt(const std::string& body) {
  std::string s = body.substr(0, std::min(body.find('\n'), size_t{200}));
  return s;
}

// partialSuccess.rejectedLogRecords of an OTLP/JSON answer; 0 when absent or not JSON.
long RejectedRecords(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("partialSuccess") || !j["partialSuccess"].is_object()) return 0;
  const auto& r = j["partialSuccess"].value("rejectedLogRecords", nlohmann::json());
  if (r.is_number_integer()) return r.get<long>();
  if (r.is_string()) return std::strtol(r.get<std::string>().c_str(), nullptr, 10);
  return 0;
}

}  // namespace

long ParseRetryAfterMs(const std::string& value, std::chrono::system_clock::time_point now) {
  if (value.empty()) return -1;
  if (value.find_first_not_of("0123456789") == std::string::npos) {
    if (value.size() > 9) return -1;
    return std::strtol(value.c_str(), nullptr, 10) * 1000;
  }
  // An HTTP-date (IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT").
  struct tm tm = {};
  const char* end = strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return -1;
  const time_t at = timegm(&tm);
  const auto wait = std::chrono::system_clock::from_time_t(at) - now;
  return std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
}

OtlpSender::OtlpSender(OtlpSenderOptions options) : options_(std::move(options)) {}

OtlpSender::~OtlpSender() {
  const Libcurl& lib = LoadLibcurl();
  if (headers_ != nullptr) lib.slist_free_all(static_cast<curl_slist*>(headers_));
  if (curl_ != nullptr) lib.easy_cleanup(static_cast<CURL*>(curl_));
}

absl::StatusOr<std::unique_ptr<OtlpSender>> OtlpSender::Create(OtlpSenderOptions options) {
  std::string base = options.endpoint;
  if (base.rfind("http://", 0) != 0 && base.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError("--otlp wants an http:// or https:// URL, not '" + base +
                                      "'");
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  const Libcurl& lib = LoadLibcurl();
  if (!lib.error.empty()) return absl::UnavailableError(lib.error);
  std::unique_ptr<OtlpSender> s(new OtlpSender(std::move(options)));
  s->url_ = base + "/v1/logs";
  CURL* curl = lib.easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  s->curl_ = curl;
  curl_slist* headers = nullptr;
  auto add = [&](const std::string& h) {
    curl_slist* next = lib.slist_append(headers, h.c_str());
    if (next != nullptr) headers = next;
  };
  add("Content-Type: " + s->options_.content_type);
  add("Expect:");  // no 100-continue round trip for large batches
  for (const std::string& h : s->options_.headers) add(h);
  s->headers_ = headers;
  lib.easy_setopt(curl, CURLOPT_URL, s->url_.c_str());
  lib.easy_setopt(curl, CURLOPT_POST, 1L);
  lib.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  lib.easy_setopt(curl, CURLOPT_TIMEOUT_MS, s->options_.timeout_ms);
  lib.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, s->options_.timeout_ms);
  lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  lib.easy_setopt(curl, CURLOPT_USERAGENT, "hangwatch-export");
  lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  return s;
}

absl::Status OtlpSender::Send(const std::string& body, OtlpDelivery* d) {
  const Libcurl& lib = LoadLibcurl();
  auto* curl = static_cast<CURL*>(curl_);
  *d = OtlpDelivery();
  long backoff_ms = options_.initial_backoff_ms;
  for (;;) {
    Exchange e;
    char error[CURL_ERROR_SIZE] = {};
    lib.easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    lib.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    lib.easy_setopt(curl, CURLOPT_WRITEDATA, &e);
    lib.easy_setopt(curl, CURLOPT_HEADERDATA, &e);
    lib.easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    ++d->attempts;
    const CURLcode rc = lib.easy_perform(curl);
    lib.easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
    long status = 0;
    if (rc == CURLE_OK) lib.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    d->status = status;
    d->response = std::move(e.response);
    if (rc == CURLE_OK && status >= 200 && status < 300) {
      d->rejected = RejectedRecords(d->response);
      return absl::OkStatus();
    }
    std::string why;
    long wait_ms = backoff_ms;
    if (rc != CURLE_OK) {
      why = error[0] != '\0' ? error : lib.easy_strerror(rc);
      // No server answered: the next run of the job tries again (the state is kept). A timed-out
      // request may only be slow: it is retried like a busy server.
      if (rc != CURLE_OPERATION_TIMEDOUT) return absl::UnavailableError(why);
    } else {
      why = "HTTP " + std::to_string(status);
      if (!d->response.empty()) why += ": " + Excerpt(d->response);
      if (!Retryable(status)) return absl::FailedPreconditionError(why);
      if (long after = ParseRetryAfterMs(e.retry_after, std::chrono::system_clock::now());
          after >= 0) {
        if (after > options_.max_backoff_ms) {
          return absl::UnavailableError(why + " (Retry-After " + e.retry_after +
                                        " is longer than --max-backoff-ms)");
        }
        wait_ms = after;
      }
    }
    if (d->attempts > options_.max_retries) {
      return absl::UnavailableError(why + " (after " + std::to_string(d->attempts) + " attempts)");
    }
    if (options_.on_retry) options_.on_retry(status, std::chrono::milliseconds(wait_ms));
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    backoff_ms = std::min(backoff_ms * 2, options_.max_backoff_ms);
  }
}

}  // namespace hangwatch::tools
