// hangwatch for standalone asio: an io_context run by any number of threads, each handler a
// run-loop pass of the thread that runs it.
//
//   asio::io_context io;
//   hangwatch::AsioWatch watch(io, "io");                  // before the threads run it
//   std::vector<std::thread> pool;
//   for (int i = 0; i < 4; ++i) pool.emplace_back([&] { io.run(); });
//   ...
//   for (auto& t : pool) t.join();                        // then `watch` may go
//
// asio has no "about to wait" hook, so the watch sees handlers, not waits: the time between two
// handlers is idle and never a hang. Two ways exist to see every handler: a wrapping executor
// (hand asio an executor whose execute() times the function), or asio's handler-tracking hooks
// (ASIO_CUSTOM_HANDLER_TRACKING, hangwatch_asio_tracking.h), which bracket every handler
// invocation in asio's own completion code. This adapter uses the hooks: they see every
// handler the io_context runs - posted functions, timers, sockets, strands, coroutines - with
// no change to how the program creates its I/O objects or posts work, where an executor sees
// only what the program remembers to bind to it (a socket made with io.get_executor() and a
// plain asio::post(io, f) would go unwatched). What they cost: the definition must be seen by
// every translation unit that includes asio (linking hangwatch::asio adds it; this header
// refuses to compile after asio was included without it), and each handler pays a call and a
// thread-local check.
//
// Each thread that runs a watched io_context is registered at its first handler, under the
// watch's role (hangwatch::TaskScope, hangwatch/threads.h: a pool thread, watched until it
// exits); a thread already watched (the main thread) keeps its watch. Handlers of io_contexts
// without a watch are not passes. Boost.Asio has the same hooks under BOOST_ASIO_ names; this
// adapter is built for standalone asio (Debian: libasio-dev).
#ifndef HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_H_
#define HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_H_

#if defined(ASIO_VERSION) && !defined(HANGWATCH_ASIO_TRACKING)
#error "asio was included without ASIO_CUSTOM_HANDLER_TRACKING=\"hangwatch_asio_tracking.h\""
#endif

#include <asio/io_context.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "hangwatch/threads.h"

namespace hangwatch {

class AsioWatch {
 public:
  static constexpr int kMaxWatchedContexts = 16;

  // Watches the handlers `context` runs, on every thread, under `role` (cut to
  // kMaxRoleBytes), each longer than `threshold` a hang (0: Config::threshold). Destroy it once
  // no thread runs the context any more (after run() returned on each).
  AsioWatch(asio::io_context& context, std::string_view role,
            std::chrono::milliseconds threshold = std::chrono::milliseconds(0));
  ~AsioWatch();
  AsioWatch(const AsioWatch&) = delete;
  AsioWatch& operator=(const AsioWatch&) = delete;

  // False when the context was already watched or every slot was taken.
  bool active() const { return slot_ >= 0; }

 private:
  std::string role_;
  TaskPool pool_;
  int slot_ = -1;
};

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_ASIO_HANGWATCH_ASIO_H_
