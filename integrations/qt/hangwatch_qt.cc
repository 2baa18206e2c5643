#include "hangwatch_qt.h"

#include <QtCore/QAbstractEventDispatcher>
#include <QtCore/QCoreApplication>
#include <QtCore/QEvent>
#include <QtCore/QMetaEnum>
#include <QtCore/QMetaObject>
#include <QtCore/QObject>
#include <QtCore/QString>
#include <QtCore/QThread>

#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "hangwatch/context.h"
#include "hangwatch/hangwatch.h"
#include "loop_thread_watch.h"

#if HANGWATCH_QT_WITH_GLIB
#include <glib.h>

#include "hangwatch_glib.h"
#endif

// The tools' hook table of QtCore (Qt's private qhooks_p.h, which the Qt packages for
// applications do not ship): [0] the table's version, [1] its size, [3] a function called with
// every QObject at the end of QObject's constructor. Unchanged from Qt 5.4 to Qt 6.
QT_BEGIN_NAMESPACE
extern Q_CORE_EXPORT quintptr qtHookData[];
QT_END_NAMESPACE

namespace hangwatch {
namespace {

constexpr int kHookDataVersion = 0;
constexpr int kHookDataSize = 1;
constexpr int kAddQObject = 3;
using AddQObjectCallback = void (*)(QObject*);

std::atomic<bool> g_active{false};
AddQObjectCallback g_previous_hook = nullptr;  // called first by ours
QtWatchOptions g_options;                      // written before the hook is installed

// Whether the calling thread is in a pass, as the dispatcher's signals last said (signals path).
thread_local bool t_in_pass = false;

// On the GUI thread, with a dispatcher watched through its signals: QEventDispatcherUNIX
// activates timers and socket notifiers after its wait and before its next awake(); their events
// reach the GUI thread's objects through the application's event filters, so the first event
// after aboutToBlock() begins the pass that awake() would have.
class EventsAfterTheWait : public QObject {
 public:
  bool eventFilter(QObject*, QEvent*) override {
    if (!t_in_pass) {
      t_in_pass = true;
      BeginWork();
    }
    return false;
  }
};

// What watches the calling thread's loop, so that its thread can undo it.
struct ThreadLoopWatch {
#if HANGWATCH_QT_WITH_GLIB
  std::unique_ptr<GMainContextWatch> glib;
#endif
  QMetaObject::Connection awake;
  QMetaObject::Connection about_to_block;
  std::unique_ptr<EventsAfterTheWait> events_after_the_wait;  // the GUI thread's
};
thread_local ThreadLoopWatch t_loop_watch;

// On a thread whose event dispatcher exists: marks its passes from now on, registering the
// thread under `role` at its loop's first wait.
void WatchThisThreadsLoop(const std::string& role, const ThreadOptions& options) {
  QAbstractEventDispatcher* dispatcher = QAbstractEventDispatcher::instance();
  if (dispatcher == nullptr) return;
  ThreadLoopWatch& w = t_loop_watch;
#if HANGWATCH_QT_WITH_GLIB
  if (dispatcher->inherits("QEventDispatcherGlib")) {
    // The context's poll function is wrapped when the loop first runs (processEvents() emits
    // one of the signals before it iterates the context): a QThread that never runs a loop
    // takes none of the GLib adapter's slots.
    auto wrap_poll = [role, options] {
      ThreadLoopWatch& here = t_loop_watch;
      if (here.glib != nullptr) return;
      QObject::disconnect(here.awake);
      QObject::disconnect(here.about_to_block);
      // The dispatcher's context is the thread's default one (Qt pushes it on the thread).
      GMainContext* context = g_main_context_ref_thread_default();
      here.glib = std::make_unique<GMainContextWatch>(context, role, options);
      g_main_context_unref(context);
    };
    w.awake = QObject::connect(dispatcher, &QAbstractEventDispatcher::awake, dispatcher, wrap_poll,
                               Qt::DirectConnection);
    w.about_to_block = QObject::connect(dispatcher, &QAbstractEventDispatcher::aboutToBlock,
                                        dispatcher, wrap_poll, Qt::DirectConnection);
    return;
  }
#endif
  w.awake = QObject::connect(
      dispatcher, &QAbstractEventDispatcher::awake, dispatcher,
      [role, options] {
        loop_thread::WatchLoopThread(role, options);
        t_in_pass = true;
        BeginWork();
      },
      Qt::DirectConnection);
  w.about_to_block = QObject::connect(
      dispatcher, &QAbstractEventDispatcher::aboutToBlock, dispatcher,
      [role, options] {
        loop_thread::WatchLoopThread(role, options);
        t_in_pass = false;
        EndWork();
      },
      Qt::DirectConnection);
  QCoreApplication* app = QCoreApplication::instance();
  if (app != nullptr && app->thread() == QThread::currentThread()) {
    w.events_after_the_wait = std::make_unique<EventsAfterTheWait>();
    app->installEventFilter(w.events_after_the_wait.get());
  }
}

// On the same thread: stops marking its passes, ends the one under way and stops the thread's
// watch when the adapter registered it.
void StopWatchingThisThreadsLoop() {
  ThreadLoopWatch& w = t_loop_watch;
#if HANGWATCH_QT_WITH_GLIB
  if (w.glib != nullptr) {
    w.glib.reset();  // restores the poll function, ends the pass and the watch
    return;
  }
#endif
  // (A GLib dispatcher whose loop never ran: only the connections, and no watch, to undo.)
  if (!w.awake && !w.about_to_block) return;
  QObject::disconnect(w.awake);
  QObject::disconnect(w.about_to_block);
  w.events_after_the_wait.reset();  // a destroyed filter is removed from the application's
  t_in_pass = false;
  loop_thread::UnwatchLoopThread();
}

std::string RoleOf(const QThread* thread) {
  const std::string name = thread->objectName().toStdString();
  return name.empty() ? std::string("qthread") : name;
}

// Runs `f` on the next emission of `signal` by `thread` only (on the emitting thread).
template <typename Signal, typename F>
void OnNext(QThread* thread, Signal signal, F f) {
  auto connection = std::make_shared<QMetaObject::Connection>();
  *connection = QObject::connect(
      thread, signal, thread,
      [connection, f] {
        QObject::disconnect(*connection);  // also frees this functor's hold on `connection`
        f();
      },
      Qt::DirectConnection);
}

// QtCore calls it with every new QObject, on the thread that makes it. The first one of a
// QThread's run is its event dispatcher, made before the thread emits started().
void OnQObjectAdded(QObject* object) {
  if (g_previous_hook != nullptr) g_previous_hook(object);
  thread_local bool t_seen = false;
  if (t_seen) return;
  t_seen = true;  // before currentThread(), which may make a QObject (QAdoptedThread)
  QThread* thread = QThread::currentThread();
  const QCoreApplication* app = QCoreApplication::instance();
  if (thread == nullptr || (app != nullptr && thread == app->thread())) return;
  const ThreadOptions options = g_options.thread_options;
  OnNext(thread, &QThread::started, [thread, options] {
    WatchThisThreadsLoop(RoleOf(thread), options);
    OnNext(thread, &QThread::finished, [] { StopWatchingThisThreadsLoop(); });
  });
}

// What a pass dispatches (hangwatch_qt.h, "What a pass dispatches"): QtCore calls the
// EventNotifyCallback callbacks (QInternal::registerCallback, qnamespace.h) with the receiver,
// the event and the result, before it delivers each event (QCoreApplication::notifyInternal2,
// on the receiver's thread); returning false lets the delivery go on.

// QEvent::Type's names by value (QMetaEnum::fromType<QEvent::Type>(): pointers into QtCore's
// static meta-object data), filled once before the callback is registered; Qt's own types are
// below QEvent::User.
std::array<const char*, QEvent::User> g_event_type_names{};

void NameEventTypes() {
  const QMetaEnum types = QMetaEnum::fromType<QEvent::Type>();
  for (int i = types.keyCount() - 1; i >= 0; --i) {  // the first key of a value wins
    const int value = types.value(i);
    if (value >= 0 && value < QEvent::User)
      g_event_type_names[static_cast<size_t>(value)] = types.key(i);
  }
}

// Two per thread, alternated: an event delivered from inside another's handler does not
// rewrite the text the pass may still say for its sender's.
constexpr size_t kTextBytes = 128;
thread_local char t_event_texts[2][kTextBytes];
thread_local int t_next_event_text = 0;

// Appends `name` as UTF-8, cut to fit (a code point is never cut in two).
size_t AppendUtf8(char* out, size_t n, size_t size, const QString& name) {
  const QChar* p = name.constData();
  const QChar* end = p + name.size();
  while (p < end) {
    char32_t c = p->unicode();
    if (p->isHighSurrogate() && p + 1 < end && p[1].isLowSurrogate()) {
      c = QChar::surrogateToUcs4(*p, p[1]);
      ++p;
    }
    ++p;
    char bytes[4];
    size_t length;
    if (c < 0x80) {
      bytes[0] = static_cast<char>(c);
      length = 1;
    } else if (c < 0x800) {
      bytes[0] = static_cast<char>(0xC0 | (c >> 6));
      bytes[1] = static_cast<char>(0x80 | (c & 0x3F));
      length = 2;
    } else if (c < 0x10000) {
      bytes[0] = static_cast<char>(0xE0 | (c >> 12));
      bytes[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      bytes[2] = static_cast<char>(0x80 | (c & 0x3F));
      length = 3;
    } else {
      bytes[0] = static_cast<char>(0xF0 | (c >> 18));
      bytes[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      bytes[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      bytes[3] = static_cast<char>(0x80 | (c & 0x3F));
      length = 4;
    }
    if (n + length + 1 > size) break;
    for (size_t i = 0; i < length; ++i) out[n++] = bytes[i];
  }
  out[n] = '\0';
  return n;
}

// "MouseButtonPress to MainWindow \"main\"", "Timer to QTimer", "QEvent::Type(1001) to Model".
bool OnEventNotify(void** data) {
  // An unwatched thread, or no watch any more.
  if (internal::t_run_loop_state == nullptr || !g_active.load(std::memory_order_relaxed)) {
    return false;
  }
  const auto* receiver = static_cast<const QObject*>(data[0]);
  const auto* event = static_cast<const QEvent*>(data[1]);
  if (receiver == nullptr || event == nullptr) return false;
  char* text = t_event_texts[t_next_event_text];
  t_next_event_text ^= 1;
  const int type = static_cast<int>(event->type());
  const char* type_name =
      type >= 0 && type < QEvent::User ? g_event_type_names[static_cast<size_t>(type)] : nullptr;
  const char* class_name = receiver->metaObject()->className();
  // Copied by hand, not with snprintf (twice as slow), on every event of a watched thread.
  size_t length = 0;
  auto append = [&](const char* part) {
    while (*part != '\0' && length + 1 < kTextBytes) text[length++] = *part++;
  };
  if (type_name != nullptr) {
    append(type_name);
  } else {
    char number[32];
    std::snprintf(number, sizeof number, "QEvent::Type(%d)", type);  // a program's own type
    append(number);
  }
  append(" to ");
  append(class_name);
  text[length] = '\0';
  const QString name = receiver->objectName();
  if (!name.isEmpty() && length + 4 < kTextBytes) {
    text[length++] = ' ';
    text[length++] = '"';
    length = AppendUtf8(text, length, kTextBytes - 1, name);
    text[length++] = '"';
    text[length] = '\0';
  }
  SetPassSource(text, nullptr);
  return false;  // the event is delivered as usual
}

// The hook's word, written atomically (QtCore reads it with a plain load from any thread).
std::atomic_ref<quintptr> HookSlot() { return std::atomic_ref<quintptr>(qtHookData[kAddQObject]); }

}  // namespace

QtWatch::QtWatch(const QtWatchOptions& options) {
  const QCoreApplication* app = QCoreApplication::instance();
  if (app == nullptr || qtHookData[kHookDataVersion] < 1 ||
      qtHookData[kHookDataSize] <= static_cast<quintptr>(kAddQObject)) {
    return;
  }
  if (g_active.exchange(true)) return;
  active_ = true;
  g_options = options;
  // Registered once, never unregistered: QtCore's callback table has no lock, and other
  // threads may be delivering events when the watch goes.
  static const bool registered = [] {
    NameEventTypes();
    return QInternal::registerCallback(QInternal::EventNotifyCallback, &OnEventNotify);
  }();
  (void)registered;
  g_previous_hook = reinterpret_cast<AddQObjectCallback>(HookSlot().load());
  HookSlot().store(reinterpret_cast<quintptr>(&OnQObjectAdded), std::memory_order_release);
  if (options.gui_thread && QThread::currentThread() == app->thread()) {
    watches_gui_thread_ = true;
    WatchThisThreadsLoop("main", {});  // the thread that called Start() keeps its watch
  }
}

QtWatch::~QtWatch() {
  if (!active_) return;
  quintptr ours = reinterpret_cast<quintptr>(&OnQObjectAdded);
  HookSlot().compare_exchange_strong(ours, reinterpret_cast<quintptr>(g_previous_hook),
                                     std::memory_order_release);
  if (watches_gui_thread_) StopWatchingThisThreadsLoop();
  g_active.store(false);
}

}  // namespace hangwatch
