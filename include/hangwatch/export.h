// HANGWATCH_EXPORT marks the public API of libhangwatch.so. The agent is compiled with
// -fvisibility=hidden, so everything not marked here stays private to the library.
#ifndef HANGWATCH_EXPORT_H_
#define HANGWATCH_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define HANGWATCH_EXPORT __attribute__((visibility("default")))
#else
#define HANGWATCH_EXPORT
#endif

#endif  // HANGWATCH_EXPORT_H_
