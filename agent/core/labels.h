// Where a record comes from, beyond its pid: the host name and the deployment labels
// (Config::labels, HANGWATCH_LABELS="k=v,k=v"), written on hangs and lag records so that a
// fleet's reports group by app version, build, region, ...
#ifndef HANGWATCH_AGENT_CORE_LABELS_H_
#define HANGWATCH_AGENT_CORE_LABELS_H_

#include <map>
#include <string>
#include <string_view>

namespace hangwatch::agent {

// "k=v,k=v" -> {k: v, ...}. Spaces around keys and values are dropped; an empty text is no
// label. False with a one-line *error on an entry without '=' or with an empty key (the labels
// before it are kept).
bool ParseLabels(std::string_view text, std::map<std::string, std::string>* out,
                 std::string* error);

// HANGWATCH_LABELS, or null when unset or when this is a secure-execution process (set-user-ID,
// set-group-ID, capabilities gained: its environment is its caller's, as secure_getenv says).
const char* LabelsVariable();

// gethostname(), or "" when it fails.
std::string HostName();

}  // namespace hangwatch::agent

#endif  // HANGWATCH_AGENT_CORE_LABELS_H_
