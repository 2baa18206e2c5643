// The one way every subcommand reads a flag's value: "--flag VALUE" or "--flag=VALUE".
#ifndef HANGWATCH_TOOLS_FLAG_VALUE_H_
#define HANGWATCH_TOOLS_FLAG_VALUE_H_

#include <string>
#include <string_view>

namespace hangwatch::tools {

// When argv[*i] is `flag` with a value, stores the value in *value, moves *i to the last
// argument used and returns true; *inline_value (if given) tells "--flag=VALUE" from
// "--flag VALUE". Returns false, *i unchanged, for any other argument and for a flag without
// its value (the caller's message for an unknown option then applies).
bool FlagValue(int argc, char** argv, int* i, std::string_view flag, std::string* value,
               bool* inline_value = nullptr);

}  // namespace hangwatch::tools

#endif  // HANGWATCH_TOOLS_FLAG_VALUE_H_
