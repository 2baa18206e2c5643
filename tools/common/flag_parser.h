// The one command-line parser of every subcommand: a command declares its flags (a switch, a
// value, a whole number in a range) and what to do with positional arguments; FlagParser reads
// "--flag VALUE" and "--flag=VALUE", checks numbers, handles --help, "--", unknown options and
// missing values, and prints every usage error through the one Fail.
#ifndef HANGWATCH_TOOLS_COMMON_FLAG_PARSER_H_
#define HANGWATCH_TOOLS_COMMON_FLAG_PARSER_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hangwatch::tools {

// Prints "COMMAND: MESSAGE" on stderr, control characters escaped (terminal_text.h), and returns
// kExitUsage (command.h): every usage error and unreadable input of every command.
int Fail(std::string_view command, std::string_view message);

// A whole decimal number from `min` to `max`: digits only (no sign, no white space).
bool ParseWholeNumber(std::string_view text, uint64_t min, uint64_t max, uint64_t* out);

class FlagParser {
 public:
  // Takes a value; returns "" when it is good, else the message Fail prints.
  using ValueHandler = std::function<std::string(const std::string& value)>;

  // `command`: how messages start ("hangwatch report").
  explicit FlagParser(std::string command);

  // --help and -h print `texts` (one after the other) on stdout; Parse then returns 0.
  void Help(std::initializer_list<const char*> texts);
  // A flag without a value.
  void Switch(std::initializer_list<std::string_view> names, std::function<void()> on);
  // A flag with a value ("--flag V", "--flag=V").
  void Value(std::initializer_list<std::string_view> names, ValueHandler on);
  void String(std::initializer_list<std::string_view> names, std::string* out);
  // "--flag V1 V2 ...": after a separate value, the arguments that follow up to the next one
  // starting with '-' are values too ("--flag=V" takes one). Each goes to `on`.
  void List(std::initializer_list<std::string_view> names, ValueHandler on);
  // A whole number from `min` to `max` (ParseWholeNumber). `wants` is the message for a bad
  // value, "{}" standing for the value; empty: "--flag wants a number from MIN to MAX, not 'V'".
  template <typename T>
  void Number(std::initializer_list<std::string_view> names, uint64_t min, uint64_t max, T* out,
              std::string wants = "") {
    static_assert(std::numeric_limits<T>::is_integer);
    const std::string flag(*names.begin());
    if (wants.empty()) {
      wants = flag + " wants a number from " + std::to_string(min) + " to " + std::to_string(max) +
              ", not '{}'";
    }
    Value(names, [=](const std::string& v) -> std::string {
      uint64_t n = 0;
      if (!ParseWholeNumber(v, min, max, &n)) return Substitute(wants, v);
      *out = static_cast<T>(n);
      return "";
    });
  }
  // The message for the flag declared last when its value is missing (else it counts as an
  // unknown option: "--flag" alone is not the flag).
  void MissingValue(std::string message);

  // Positional arguments go to `on` (default: collected into positional()).
  void Positional(ValueHandler on);
  // The first positional argument, or "--", ends the options: Parse stops there (rest()).
  void StopAtPositional();
  // "--" is an unknown option rather than the end of the options.
  void NoDoubleDash();
  // "-" alone is an option (unknown) rather than a positional argument.
  void LoneDashIsOption();
  // "-5": a positional argument (a negative number), not an option.
  void DashDigitIsPositional();
  // The message for an unknown option, "{}" standing for it. Default: "unknown option '{}' or
  // missing value (see COMMAND --help)".
  void UnknownOption(std::string message);
  // Appended to every message of Fail() ("(try hangwatch snapshot --help)").
  void FailSuffix(std::string suffix);
  // Applied to every message of Fail() before it is escaped (export: no URL credentials).
  void Redact(std::string (*redact)(std::string_view));

  // Parses argv[first...]. The exit status when the command is done (0 after --help, kExitUsage
  // after a usage error, printed), nullopt when it should go on.
  std::optional<int> Parse(int argc, char** argv, int first = 1);

  // Fail(command, message) with this parser's suffix and redaction.
  int Fail(const std::string& message) const;

  const std::vector<std::string>& positional() const { return positional_; }
  // With StopAtPositional: the index of the first argument after the options.
  int rest() const { return rest_; }

  // `pattern` with its first "{}" replaced by `value`.
  static std::string Substitute(const std::string& pattern, const std::string& value);

 private:
  enum class Kind { kSwitch, kValue, kList };
  struct Flag {
    std::vector<std::string> names;
    Kind kind;
    std::function<void()> on_switch;
    ValueHandler on_value;
    std::string missing;  // message for a missing value; empty: an unknown option
  };
  // Matches argv[*i] against `f`: sets *value (and *inline_value) for a value flag; false when
  // it is not this flag or its value is missing (*missing then set).
  bool Match(const Flag& f, int argc, char** argv, int i, std::string* value, bool* inline_value,
             bool* missing) const;
  bool IsOption(std::string_view a) const;

  std::string command_;
  std::vector<const char*> help_;
  std::vector<Flag> flags_;
  ValueHandler positional_handler_;
  std::vector<std::string> positional_;
  bool stop_at_positional_ = false, double_dash_ = true, lone_dash_is_option_ = false,
       dash_digit_is_positional_ = false;
  std::string unknown_option_, suffix_;
  std::string (*redact_)(std::string_view) = nullptr;
  int rest_ = 0;
};

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_COMMON_FLAG_PARSER_H_
