// A Qt program watched on its main thread and on a QThread through the Qt adapter
// (integrations/qt): one hangwatch::QtWatch, nothing else marked. A queued call blocks the
// "io" thread's event loop for 300 ms; the hang is reported as that thread's, and the program
// quits once it is. docs/embedding.md runs it.
//
// Usage: hangwatch_qt_threads   (no display needed: a QCoreApplication)
#include <QtCore/QCoreApplication>
#include <QtCore/QMetaObject>
#include <QtCore/QThread>
#include <QtCore/QTimer>

#include <hangwatch/hangwatch.h>
#include <hangwatch_qt.h>

#include <chrono>
#include <cstdio>
#include <thread>

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;  // this example reports through its callback only
  config.on_hang = [&app](const hangwatch::HangRecord& hang) {
    std::printf("hang: %llu ms on thread %s (tid %lld), %s\n",
                static_cast<unsigned long long>(hang.duration_ms), hang.thread_role.c_str(),
                static_cast<long long>(hang.tid), hangwatch::HangClassName(hang.hang_class));
    QMetaObject::invokeMethod(&app, [] { QCoreApplication::quit(); });  // the watchdog's thread
  };
  if (auto status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  hangwatch::QtWatch watch;  // the main thread and every QThread started from now on
  QThread io;
  io.setObjectName("io");  // the thread's role
  QObject handler;         // its queued calls run in the io thread's event loop
  handler.moveToThread(&io);
  io.start();
  QMetaObject::invokeMethod(&handler, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // blocks the io loop
  });
  QTimer::singleShot(10'000, &app, [] { QCoreApplication::exit(1); });  // no hang: fail
  const int status = app.exec();
  io.quit();
  io.wait();
  hangwatch::Stop();
  return status;
}
