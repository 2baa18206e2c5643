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
//
// What a pass dispatches (the hang's context.source, hangwatch/context.h): the event being
// delivered, as "<QEvent::Type's name> to <receiver's class>" and the receiver's objectName()
// in quotes when it has one: `MouseButtonPress to MainWindow "main"`, `Timer to QTimer`,
// `MetaCall to QObject "worker"` (a queued slot or functor), `QEvent::Type(1001) to Model` (a
// type of the program's own); formatted into a per-thread buffer, cut to 127 bytes; no
// callback. Qt calls no public hook per event besides QCoreApplication::notify(), which is the
// program's to override, and event filters, which see only the GUI thread's objects (an
// application's filter) or one object each. The adapter uses the callback table QtCore keeps
// for tools (QInternal::registerCallback(QInternal::EventNotifyCallback), in qnamespace.h since
// Qt 4, unchanged in Qt 5 and Qt 6): QtCore calls it before it delivers each event, on the
// receiver's thread, before notify() and the filters. It is registered by the first QtWatch,
// on the GUI thread (QtCore's table has no lock: before the program starts its QThreads), and
// stays registered for the life of the process (it does nothing once no watch is active, and
// on a thread that is not watched costs a thread-local load).
// Limits: the hook runs before delivery only, so an event sent from inside another's handler
// (sendEvent(), a direct signal that sends one) names the pass from then on, even after it
// returns; a slot called directly by a signal is told by the event whose handler emitted it;
// Qt work that is not an event (a GLib source of the program's, a socket notifier's activation
// under QEventDispatcherUNIX before its event) is not named.
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
