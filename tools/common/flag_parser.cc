#include "tools/common/flag_parser.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "tools/common/command.h"
#include "tools/common/terminal_text.h"

namespace hangwatch::tools {

int Fail(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "%s: %s\n", EscapeForTerminal(command).c_str(),
               EscapeForTerminal(message).c_str());
  return kExitUsage;
}

bool ParseWholeNumber(std::string_view text, uint64_t min, uint64_t max, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || v < min || v > max) return false;
  *out = v;
  return true;
}

FlagParser::FlagParser(std::string command) : command_(std::move(command)) {
  unknown_option_ = "unknown option '{}' or missing value (see " + command_ + " --help)";
  positional_handler_ = [this](const std::string& a) {
    positional_.push_back(a);
    return std::string();
  };
}

void FlagParser::Help(std::initializer_list<const char*> texts) { help_ = texts; }

void FlagParser::Switch(std::initializer_list<std::string_view> names, std::function<void()> on) {
  flags_.push_back({{names.begin(), names.end()}, Kind::kSwitch, std::move(on), nullptr, ""});
}

void FlagParser::Value(std::initializer_list<std::string_view> names, ValueHandler on) {
  flags_.push_back({{names.begin(), names.end()}, Kind::kValue, nullptr, std::move(on), ""});
}

void FlagParser::String(std::initializer_list<std::string_view> names, std::string* out) {
  Value(names, [out](const std::string& v) {
    *out = v;
    return std::string();
  });
}

void FlagParser::List(std::initializer_list<std::string_view> names, ValueHandler on) {
  flags_.push_back({{names.begin(), names.end()}, Kind::kList, nullptr, std::move(on), ""});
}

void FlagParser::MissingValue(std::string message) { flags_.back().missing = std::move(message); }

void FlagParser::Positional(ValueHandler on) { positional_handler_ = std::move(on); }
void FlagParser::StopAtPositional() { stop_at_positional_ = true; }
void FlagParser::NoDoubleDash() { double_dash_ = false; }
void FlagParser::LoneDashIsOption() { lone_dash_is_option_ = true; }
void FlagParser::DashDigitIsPositional() { dash_digit_is_positional_ = true; }
void FlagParser::UnknownOption(std::string message) { unknown_option_ = std::move(message); }
void FlagParser::FailSuffix(std::string suffix) { suffix_ = std::move(suffix); }
void FlagParser::Redact(std::string (*redact)(std::string_view)) { redact_ = redact; }

std::string FlagParser::Substitute(const std::string& pattern, const std::string& value) {
  std::string out = pattern;
  const size_t at = out.find("{}");
  if (at != std::string::npos) out.replace(at, 2, value);
  return out;
}

int FlagParser::Fail(const std::string& message) const {
  const std::string text = message + suffix_;
  return tools::Fail(command_, redact_ != nullptr ? redact_(text) : text);
}

bool FlagParser::Match(const Flag& f, int argc, char** argv, int i, std::string* value,
                       bool* inline_value, bool* missing) const {
  const std::string_view a = argv[i];
  for (const std::string& name : f.names) {
    if (f.kind == Kind::kSwitch) {
      if (a == name) return true;
      continue;
    }
    if (a == name) {
      if (i + 1 >= argc) {
        *missing = true;
        return false;
      }
      *value = argv[i + 1];
      *inline_value = false;
      return true;
    }
    if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
      *value = std::string(a.substr(name.size() + 1));
      *inline_value = true;
      return true;
    }
  }
  return false;
}

bool FlagParser::IsOption(std::string_view a) const {
  if (a.empty() || a[0] != '-') return false;
  if (a.size() == 1) return lone_dash_is_option_;
  return !(dash_digit_is_positional_ && a[1] >= '0' && a[1] <= '9');
}

std::optional<int> FlagParser::Parse(int argc, char** argv, int first) {
  int i = first;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (!help_.empty() && (a == "--help" || a == "-h")) {
      for (const char* text : help_) std::fputs(text, stdout);
      return 0;
    }
    if (double_dash_ && a == "--") {
      ++i;
      if (stop_at_positional_) break;
      for (; i < argc; ++i) {
        if (std::string error = positional_handler_(argv[i]); !error.empty()) return Fail(error);
      }
      break;
    }
    const Flag* taken = nullptr;
    std::string value;
    bool inline_value = false;
    std::string missing;
    for (const Flag& f : flags_) {
      bool no_value = false;
      if (Match(f, argc, argv, i, &value, &inline_value, &no_value)) {
        taken = &f;
        break;
      }
      if (no_value && !f.missing.empty()) missing = f.missing;
    }
    if (taken == nullptr) {
      if (!missing.empty()) return Fail(missing);
      if (IsOption(a)) return Fail(Substitute(unknown_option_, std::string(a)));
      if (stop_at_positional_) break;
      if (std::string error = positional_handler_(std::string(a)); !error.empty()) {
        return Fail(error);
      }
      continue;
    }
    if (taken->kind == Kind::kSwitch) {
      taken->on_switch();
      continue;
    }
    if (!inline_value) ++i;
    if (std::string error = taken->on_value(value); !error.empty()) return Fail(error);
    if (taken->kind == Kind::kList && !inline_value) {
      while (i + 1 < argc && argv[i + 1][0] != '-') {
        if (std::string error = taken->on_value(argv[++i]); !error.empty()) return Fail(error);
      }
    }
  }
  rest_ = i;
  return std::nullopt;
}

}  // namespace hangwatch::tools
