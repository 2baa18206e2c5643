// The shim's settings as the process's environment had them when the shim was loaded.
//
// The agent library reads the HANGWATCH_* settings late: when the main thread first waits for
// events, or when the program first changes user. By then the program may have replaced its
// environment: nginx's workers rebuild `environ` with only the variables its `env` directives
// name (and TZ) before they change user and reach their loop, so HANGWATCH_REPORT and the rest
// were gone and the workers, though watched, wrote no record at all. The loader's constructor
// therefore copies every HANGWATCH_* variable (and JOURNAL_STREAM, which the stderr policy
// reads) into a fixed buffer, and the settings fall back to that copy for a variable that is
// missing now. A variable still set is read as it is (a program may set one for itself before
// its loop, as tests do).
//
// Internal to libhangwatch_preload.so: libc only, no allocation. Secure execution (AT_SECURE)
// copies nothing, as secure_getenv() reads nothing there.
#ifndef HANGWATCH_INTEGRATIONS_PRELOAD_LOAD_ENVIRONMENT_H_
#define HANGWATCH_INTEGRATIONS_PRELOAD_LOAD_ENVIRONMENT_H_

namespace hangwatch::preload {

// secure_getenv(name), else the value `name` had when the shim was loaded, else null. Any
// thread; the copy is written once, by the constructor, before any other code of the shim runs
// on another thread (and copied as it is into a forked child).
const char* ShimSetting(const char* name);

}  // namespace hangwatch::preload

#endif  // HANGWATCH_INTEGRATIONS_PRELOAD_LOAD_ENVIRONMENT_H_
