// asio's custom handler-tracking hooks (ASIO_CUSTOM_HANDLER_TRACKING names this header), as
// hangwatch::AsioWatch (hangwatch_asio.h) uses them: every handler an io_context invokes is a
// run-loop pass of the thread that invokes it. Only the invocation hooks do anything; the
// others are empty, and the tracked-handler base is empty, so asio's classes keep their layout.
//
// asio includes this header itself (asio/detail/handler_tracking.hpp), in every translation unit
// that includes asio and sees the definition: linking hangwatch::asio adds it to the target's
// compile definitions. A translation unit compiled without it is not broken (same layouts), but
// the handlers whose completion code the linker takes from it are not watched.
#ifndef HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_TRACKING_H_
#define HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_TRACKING_H_

#define HANGWATCH_ASIO_TRACKING 1

namespace hangwatch::asio_tracking {

// On the thread about to invoke a handler / that has invoked it (hangwatch_asio.cc). The
// outermost invocation of a thread is the pass; a handler run inside another (poll() from a
// handler) is part of it.
void HandlerBegin() noexcept;
void HandlerEnd() noexcept;

// asio's `tracked_completion`: made in each operation's completion function, whether it
// invokes the handler or only destroys it.
class Completion {
 public:
  template <typename... Args>
  explicit Completion(const Args&...) noexcept {}
  ~Completion() { End(); }  // a handler that threw still ends its pass
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  template <typename... Args>
  void Begin(const Args&...) noexcept {
    if (!begun_) HandlerBegin();
    begun_ = true;
  }
  void End() noexcept {
    if (begun_) HandlerEnd();
    begun_ = false;
  }

 private:
  bool begun_ = false;
};

}  // namespace hangwatch::asio_tracking

#define ASIO_INHERIT_TRACKED_HANDLER
#define ASIO_ALSO_INHERIT_TRACKED_HANDLER
#define ASIO_HANDLER_TRACKING_INIT (void)0
#define ASIO_HANDLER_LOCATION(args) (void)0
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
