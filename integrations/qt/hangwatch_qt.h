// hangwatch for Qt 5 and Qt 6: one object watches the GUI thread and every QThread that runs an
// event loop.
//
//   QApplication app(argc, argv);
//   hangwatch::Start(config);            // the GUI thread: role "main"
//   hangwatch::QtWatch watch;            // before the program starts its QThreads
//   QThread io;
//   io.setObjectName("io");              // the thread's role ("qthread" when unnamed)
//   io.start();                          // watched once its loop runs
//   return app.exec();
//
// How a pass is seen. Each thread's QAbstractEventDispatcher announces its waits with two
// signals, aboutToBlock() and awake(), but where they fall depends on the dispatcher:
// QEventDispatcherGlib (Qt's default on Linux when Qt is built with GLib, as Debian's are; the
// GUI thread's dispatcher derives from it) emits aboutToBlock() before a whole GLib iteration
// and awake() after it, so the slots that iteration dispatches would fall between "about to
// block" and "awake". On a GLib dispatcher the adapter therefore wraps the poll function of the
// thread's GMainContext (hangwatch::GMainContextWatch, integrations/glib): exact. On any other
// dispatcher (QEventDispatcherUNIX under QT_NO_GLIB=1, macOS's and Windows's, which emit them
// around their wait) it uses the signals: awake() begins a pass, aboutToBlock() ends it.
// QEventDispatcherUNIX activates timers and socket notifiers after its wait but before its next
// awake(): on the GUI thread an application event filter begins the pass at the first event
// after aboutToBlock(); on a QThread with that dispatcher, timers and socket notifiers are not
// in a pass (posted events and queued slots are).
//
// How a new QThread is seen. Qt has no public notification of a thread starting (QThread's
// started() is per object, and the program's QThread objects are not enumerable); an
// application-wide event filter sees only the GUI thread's objects. So the adapter uses the
// object-creation hook Qt keeps for tools (qtHookData[AddQObject], exported by QtCore, versioned,
// used by GammaRay and Qt Application Manager; a hook already installed is chained, and
// restored when the watch goes). The first QObject a new thread creates is its event
// dispatcher, made by QThread before it emits started() on the new thread: the hook then
// connects to that thread's started(), and there the dispatcher is complete and the thread is
// watched. A thread is registered (hangwatch::WatchThread, role: the QThread's objectName(), else
// "qthread") at its loop's first wait, so a QThread that never runs an event loop (a worker
// that overrides run(), a QThreadPool thread) takes no slot; its finished() ends its watch.
// QThreads started before the watch was made are not watched.
#ifndef HANGWATCH_INTEGRATIONS_QT_HANGWATCH_QT_H_
#define HANGWATCH_INTEGRATIONS_QT_HANGWATCH_QT_H_

#include "hangwatch/threads.h"

namespace hangwatch {

struct QtWatchOptions {
  // The QThreads' threshold and sample interval (0: Config's). The GUI thread keeps Config's.
  ThreadOptions thread_options;
  // Watch the GUI thread too (the QCoreApplication's thread).
  bool gui_thread = true;
};

class QtWatch {
 public:
  // On the GUI thread, once the QCoreApplication exists. One QtWatch at a time: another is
  // inactive.
  explicit QtWatch(const QtWatchOptions& options = {});
  // On the GUI thread: stops watching it and watching new threads; QThreads already watched
  // stay watched until they finish.
  ~QtWatch();
  QtWatch(const QtWatch&) = delete;
  QtWatch& operator=(const QtWatch&) = delete;

  // False when another QtWatch is active, there is no QCoreApplication, or QtCore has no
  // object-creation hook (then not even the GUI thread is watched).
  bool active() const { return active_; }

 private:
  bool active_ = false;
  bool watches_gui_thread_ = false;
};

}  // namespace hangwatch

#endif  // HANGWATCH_INTEGRATIONS_QT_HANGWATCH_QT_H_
