// asio's custom handler-tracking hooks (ASIO_CUSTOM_HANDLER_TRACKING names this header), as
// hangwatch::AsioWatch (hangwatch_asio.h) uses them: every handler an io_context invokes is a
// run-loop pass of the thread that invokes it. Only the invocation hooks do anything; the
// others are empty, and the tracked-handler base is empty, so asio's classes keep their layout.
//
// asio includes this header itself (asio/detail/handler_tracking.hpp), in every translation unit
// that includes asio and sees the definition: linking hangwatch::asio adds it to the target's
// compile definitions. A translation unit compiled without it is not broken (same layouts), but
// the handlers whose completion code the linker takes from it are not watched.
//
// What a pass dispatches (hangwatch_asio.h says what a hang is told): the completion hook gets
// the operation whose handler completes, so its type names the source and its do_complete
// function (one per handler type) is the callback; ASIO_HANDLER_LOCATION, inside a handler,
// names the location instead while its scope lasts.
#ifndef HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_TRACKING_H_
#define HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_TRACKING_H_

#define HANGWATCH_ASIO_TRACKING 1

#include <array>
#include <cstddef>
#include <string_view>

namespace hangwatch::asio_tracking {

// On the thread about to invoke a handler / that has invoked it (hangwatch_asio.cc). The
// outermost invocation of a thread is the pass; a handler run inside another (poll() from a
// handler) is part of it, and says what it dispatches while it runs. `source` is a static
// string, `callback` a function's address or null.
void HandlerBegin(const char* source, const void* callback) noexcept;
void HandlerEnd() noexcept;

// "asio::detail::wait_handler<...>" -> "asio wait_handler": the operation's template, from the
// compiler's name of `Op` (GCC's and Clang's __PRETTY_FUNCTION__), at compile time.
template <typename Op>
constexpr std::string_view PrettyNameOf() {
  return __PRETTY_FUNCTION__;
}
inline constexpr size_t kOperationNameBytes = 64;
template <typename Op>
constexpr std::array<char, kOperationNameBytes> OperationName() {
  std::string_view name = PrettyNameOf<Op>();
  const size_t at = name.find("Op = ");
  name = at == std::string_view::npos ? std::string_view("handler") : name.substr(at + 5);
  name = name.substr(0, name.find_first_of("<;]"));
  if (const size_t colons = name.rfind("::"); colons != std::string_view::npos) {
    name = name.substr(colons + 2);
  }
  std::array<char, kOperationNameBytes> text{};
  constexpr std::string_view kPrefix = "asio ";
  size_t n = 0;
  for (char c : kPrefix) text[n++] = c;
  for (char c : name) {
    if (n + 1 == text.size()) break;
    text[n++] = c;
  }
  return text;
}
template <typename Op>
inline constexpr std::array<char, kOperationNameBytes> kOperationName = OperationName<Op>();

// The operation's completion function, instantiated for its handler's type (so its symbol
// names the handler); null when `Op` has no accessible one.
template <typename Op>
const void* CompletionFunctionOf() noexcept {
  if constexpr (requires { &Op::do_complete; }) {
    return reinterpret_cast<const void*>(&Op::do_complete);
  } else {
    return nullptr;
  }
}

// ASIO_HANDLER_LOCATION((file, line, function)): inside a handler of a watched io_context, the
// pass says "file.cc:123 function" (the file's base name) until the scope ends.
class Location {
 public:
  Location(const char* file, int line, const char* function) noexcept;
  ~Location();
  Location(const Location&) = delete;
  Location& operator=(const Location&) = delete;

 private:
  bool told_ = false;
  const char* outer_source_ = nullptr;
  const void* outer_callback_ = nullptr;
};

// asio's `tracked_completion`: made in each operation's completion function, whether it
// invokes the handler or only destroys it.
class Completion {
 public:
  template <typename Op>
  explicit Completion(const Op&) noexcept
      : source_(kOperationName<Op>.data()), callback_(CompletionFunctionOf<Op>()) {}
  ~Completion() { End(); }  // a handler that threw still ends its pass
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  template <typename... Args>
  void Begin(const Args&...) noexcept {
    if (!begun_) HandlerBegin(source_, callback_);
    begun_ = true;
  }
  void End() noexcept {
    if (begun_) HandlerEnd();
    begun_ = false;
  }

 private:
  const char* source_;
  const void* callback_;
  bool begun_ = false;
};

}  // namespace hangwatch::asio_tracking

#define ASIO_INHERIT_TRACKED_HANDLER
#define ASIO_ALSO_INHERIT_TRACKED_HANDLER
#define ASIO_HANDLER_TRACKING_INIT (void)0
#define ASIO_HANDLER_LOCATION(args) ::hangwatch::asio_tracking::Location tracked_location args
#define ASIO_HANDLER_CREATION(args) (void)0
#define ASIO_HANDLER_COMPLETION(args) ::hangwatch::asio_tracking::Completion tracked_completion args
#define ASIO_HANDLER_INVOCATION_BEGIN(args) tracked_completion.Begin args
#define ASIO_HANDLER_INVOCATION_END tracked_completion.End()
#define ASIO_HANDLER_OPERATION(args) (void)0
#define ASIO_HANDLER_REACTOR_REGISTRATION(args) (void)0
#define ASIO_HANDLER_REACTOR_DEREGISTRATION(args) (void)0
#define ASIO_HANDLER_REACTOR_READ_EVENT 0
#define ASIO_HANDLER_REACTOR_WRITE_EVENT 0
#define ASIO_HANDLER_REACTOR_ERROR_EVENT 0
#define ASIO_HANDLER_REACTOR_EVENTS(args) (void)0
#define ASIO_HANDLER_REACTOR_OPERATION(args) (void)0

#endif  // HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_TRACKING_H_
