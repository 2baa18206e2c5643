// What hangwatch must know about a HotSpot JVM before it may ask it for a thread dump through
// the attach mechanism (jvm/attach_client.h): whether the JVM catches SIGQUIT (a JVM run with
// -Xrs does not, and the signal would kill it), whether its attach mechanism is switched off
// (-XX:+DisableAttachMechanism on the command line or in the option variables the JVM or its
// launcher read; then the signal would print a thread dump into the program's own output), its
// state (a stopped process cannot answer), user, and its pid in its own pid namespace (the
// attach files are named with it). Read from /proc/PID/{status,cmdline,environ}.
//
// The parsers are separate functions over text, so that tests feed them hand-made files.
#ifndef HANGWATCH_JVM_JVM_PROCESS_H_
#define HANGWATCH_JVM_JVM_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace hangwatch::jvm {

struct JvmProcessFacts {
  pid_t pid = 0;
  pid_t ns_pid = 0;  // the pid inside the JVM's own pid namespace (NSpid's last entry)
  uid_t uid = 0;     // effective user and group (the attach socket's owner)
  gid_t gid = 0;
  char state = '?';                // the process's scheduler state (T: stopped)
  bool catches_sigquit = false;    // SigCgt has SIGQUIT: the JVM's own handler
  bool environ_readable = false;   // /proc/PID/environ could be read
  bool attach_disabled = false;    // -XX:+DisableAttachMechanism wins
  std::string attach_disabled_in;  // where the winning setting was: "the command line", ...
};

// Reads the facts of process `pid`. False with one line in *error when /proc/PID/status cannot
// be read (the process is gone, or not ours to see).
bool ReadJvmProcessFacts(pid_t pid, JvmProcessFacts* facts, std::string* error);

// For a JVM in a pid namespace of its own (a container): each of its threads' tid in that
// namespace (what its thread dump calls nid) -> its tid here, from each
// /proc/PID/task/TID/status's NSpid line. Empty when the threads cannot be listed.
std::map<uint64_t, pid_t> NamespaceTids(pid_t pid);

// ---- parsers (exposed for tests) ----

// From a /proc/PID/status text: the SIGQUIT bit of SigCgt, the last NSpid entry (0 when
// absent), the effective uid and gid (the second field of Uid:/Gid:) and the state letter.
// False when a line is missing or malformed.
bool ParseJvmStatus(std::string_view status, JvmProcessFacts* facts);

// What an option list says of the attach mechanism: +1 when the last DisableAttachMechanism
// setting in it is "-XX:+DisableAttachMechanism", -1 when it is "-XX:-...", 0 when there is
// none. `separator` splits the options (NUL for /proc/PID/cmdline; for the option variables,
// any white space: pass ' ').
int AttachSettingIn(std::string_view options, char separator);

// The value of variable `name` in a /proc/PID/environ text (NUL-separated); false if absent.
bool EnvironValue(std::string_view environ, std::string_view name, std::string* value);

// Combines the settings in HotSpot's order (each later one overrides): JAVA_TOOL_OPTIONS, then
// JDK_JAVA_OPTIONS (the java launcher puts it before its own arguments), then the command line,
// then _JAVA_OPTIONS. Sets attach_disabled and attach_disabled_in.
void DecideAttachDisabled(std::string_view cmdline, std::string_view environ,
                          JvmProcessFacts* facts);

}  // namespace hangwatch::jvm

#endif  // HANGWATCH_JVM_JVM_PROCESS_H_
