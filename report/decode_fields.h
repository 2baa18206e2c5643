// The decoder's field readers (report_decode.cc, context_decode.cc): each checks a member's
// presence, type and range and names the member in the error, the one error style of every
// record type's decoder. Internal to report/ (hangwatch_report_decode).
#ifndef HANGWATCH_REPORT_DECODE_FIELDS_H_
#define HANGWATCH_REPORT_DECODE_FIELDS_H_

#include <charconv>
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "hangwatch/hang_record.h"
#include "nlohmann/json.hpp"

namespace hangwatch::report::decode_internal {

using nlohmann::json;

// Field readers: each returns false when the field is missing or has the wrong type, and
// names the field in *error.
struct Fields {
  const json& j;
  std::string* error;

  bool Fail(const char* name, const char* want) {
    *error = std::string("field '") + name + "' " +
             (j.contains(name) ? std::string("is not ") + want : std::string("is missing"));
    return false;
  }
  template <typename T>
  bool Int(const char* name, T* out, bool optional = false) {
    auto it = j.find(name);
    if (it == j.end()) return optional || Fail(name, "an integer");
    if (!it->is_number_integer()) return Fail(name, "an integer");
    if (it->is_number_unsigned()) {
      const uint64_t v = it->get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return Fail(name, "in range");
      *out = static_cast<T>(v);
    } else {
      const int64_t v = it->get<int64_t>();
      if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (v > 0 &&
           static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
        return Fail(name, "in range");
      }
      *out = static_cast<T>(v);
    }
    return true;
  }
  bool Str(const char* name, std::string* out, bool optional = false) {
    auto it = j.find(name);
    if (it == j.end()) return optional || Fail(name, "a string");
    if (!it->is_string()) return Fail(name, "a string");
    *out = it->get<std::string>();
    return true;
  }
  bool Bool(const char* name, bool* out, bool optional = false) {
    auto it = j.find(name);
    if (it == j.end()) return optional || Fail(name, "a boolean");
    if (!it->is_boolean()) return Fail(name, "a boolean");
    *out = it->get<bool>();
    return true;
  }
  bool Hex(const char* name, uint64_t* out) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) return Fail(name, "a \"0x...\" string");
    const std::string& s = it->get_ref<const std::string&>();
    if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
      return Fail(name, "a \"0x...\" string");
    }
    auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), *out, 16);
    if (ec != std::errc() || end != s.data() + s.size()) return Fail(name, "a \"0x...\" string");
    return true;
  }
  // A number (integer or not), e.g. a figure in milliseconds.
  bool Number(const char* name, double* out, bool optional = false) {
    auto it = j.find(name);
    if (it == j.end()) return optional || Fail(name, "a number");
    if (!it->is_number()) return Fail(name, "a number");
    *out = it->get<double>();
    return true;
  }
  // An object of strings ({"k":"v",...}); absent reads as empty.
  bool Labels(const char* name, std::map<std::string, std::string>* out) {
    auto it = j.find(name);
    if (it == j.end()) return true;
    if (!it->is_object()) return Fail(name, "an object of strings");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) return Fail(name, "an object of strings");
      (*out)[k] = v.get<std::string>();
    }
    return true;
  }
  const json* Array(const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_array()) {
      Fail(name, "an array");
      return nullptr;
    }
    return &*it;
  }
};

// A hang's "context", "input", "perceived", "not_responding" and "queued_ms"
// (context_decode.cc); absent, each reads as the HangRecord's default.
bool ParseContextFields(const json& j, HangRecord* h, std::string* error);

}  // namespace hangwatch::report::decode_internal

#endif  // HANGWATCH_REPORT_DECODE_FIELDS_H_
