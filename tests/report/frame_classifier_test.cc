// report/frame_classifier: which frames are the system's, a runtime's or the application's.
#include "report/frame_classifier.h"

#include "gtest/gtest.h"

namespace hangwatch::report {
namespace {

TEST(FrameClassifierTest, SystemLibrariesByFileName) {
  for (const char* m : {"/usr/lib/x86_64-linux-gnu/libc.so.6",
                        "/lib/x86_64-linux-gnu/libm.so.6",
                        "/lib/x86_64-linux-gnu/libpthread.so.0",
                        "/lib64/ld-linux-x86-64.so.2",
                        "/lib/ld-linux-aarch64.so.1",
                        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                        "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                        "/lib/libc-2.31.so",
                        "linux-vdso.so.1",
                        "[vdso]",
                        "/usr/lib/x86_64-linux-gnu/libc++.so.1",
                        "/usr/lib/libc++abi.so.1",
                        "/lib/ld-musl-x86_64.so.1",
                        "/usr/lib/x86_64-linux-gnu/libuv.so.1",
                        "/opt/hw/lib/libhangwatch_preload.so",
                        "/opt/hw/lib/libhangwatch_preload_agent.so",
                        "/usr/lib/libhangwatch.so.0",
                        "/lib/x86_64-linux-gnu/libdl.so.2",
                        "/lib/x86_64-linux-gnu/librt.so.1",
                        "/usr/lib/x86_64-linux-gnu/libtsan.so.2",
                        "/usr/lib/x86_64-linux-gnu/libasan.so.8",
                        "/usr/lib/x86_64-linux-gnu/libubsan.so.1"}) {
    EXPECT_TRUE(IsSystemModule(m)) << m;
    EXPECT_EQ(ClassifyFrame(m, "anything"), FrameKind::kSystem) << m;
    EXPECT_EQ(ClassifyFrame(m, ""), FrameKind::kSystem) << m;
  }
}

TEST(FrameClassifierTest, LookalikesAreTheApplications) {
  for (const char* m : {"/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "/usr/lib/libmagic.so.1",
                        "/usr/bin/redis-check-rdb", "/usr/lib/libcurl.so.4", "/srv/app/libcx.so",
                        "/usr/lib/libldap-2.5.so.0", "/usr/bin/ld-wrapper", ""}) {
    EXPECT_FALSE(IsSystemModule(m)) << m;
    EXPECT_EQ(ClassifyFrame(m, "debugCommand"), FrameKind::kApp) << m;
  }
}

TEST(FrameClassifierTest, PythonEvalLoopAndCallDispatchAreTheRuntime) {
  for (const char* m : {"/usr/bin/python3.11", "/usr/lib/libpython3.12.so.1.0",
                        "/usr/local/bin/python3", "/usr/bin/python2.7"}) {
    for (const char* f : {"_PyEval_EvalFrameDefault", "PyEval_EvalCode", "PyObject_Vectorcall",
                          "_PyObject_MakeTpCall", "PyObject_Call", "_PyFunction_Vectorcall",
                          "cfunction_vectorcall_O", "method_vectorcall_NOARGS", "Py_RunMain",
                          "Py_BytesMain", "_PyRun_SimpleFileObject", "PyIter_Send", "main"}) {
      EXPECT_EQ(ClassifyFrame(m, f), FrameKind::kRuntime) << m << " " << f;
    }
    // The C function Python code called is what the user called: time.sleep, select.
    EXPECT_EQ(ClassifyFrame(m, "time_sleep"), FrameKind::kApp) << m;
    EXPECT_EQ(ClassifyFrame(m, "select_epoll_poll"), FrameKind::kApp) << m;
    EXPECT_EQ(ClassifyFrame(m, ""), FrameKind::kApp) << m;
  }
  // The same names outside an interpreter's module are the application's own.
  EXPECT_EQ(ClassifyFrame("/usr/bin/myapp", "PyObject_Call"), FrameKind::kApp);
  EXPECT_EQ(ClassifyFrame("/usr/bin/myapp", "main"), FrameKind::kApp);
}

TEST(FrameClassifierTest, NodeAndV8InternalsAreTheRuntime) {
  for (const char* m : {"/usr/bin/node", "/usr/lib/x86_64-linux-gnu/libnode.so.108"}) {
    for (const char* f : {"Builtins_InterpreterEntryTrampoline", "Builtins_JSEntry",
                          "v8::internal::Execution::Call(v8::internal::Isolate*)",
                          "node::SpinEventLoop(node::Environment*)", "uv_run", "main"}) {
      EXPECT_EQ(ClassifyFrame(m, f), FrameKind::kRuntime) << m << " " << f;
    }
  }
  // JIT code: no module; its perf-map name is the application's function.
  EXPECT_EQ(ClassifyFrame("", "LazyCompile:*busy /tmp/app.js:3"), FrameKind::kApp);
  EXPECT_EQ(ClassifyFrame("", ""), FrameKind::kApp);
  EXPECT_EQ(ClassifyFrame("/usr/lib/jvm/lib/server/libjvm.so", "JavaCalls::call"),
            FrameKind::kRuntime);
  // The JDK's native libraries under a Java native method: the Java caller is the culprit.
  EXPECT_EQ(ClassifyFrame("/usr/lib/jvm/java-17-openjdk-amd64/lib/libnio.so",
                          "Java_sun_nio_ch_SocketDispatcher_read0"),
            FrameKind::kRuntime);
  EXPECT_EQ(ClassifyFrame("/usr/lib/jvm/java-17-openjdk-amd64/lib/libnet.so", "NET_Timeout"),
            FrameKind::kRuntime);
  EXPECT_EQ(ClassifyFrame("/srv/app/libjavalin.so", "work"), FrameKind::kApp);
}

TEST(FrameClassifierTest, ProgramEntryIsTheRuntimeAnywhere) {
  EXPECT_EQ(ClassifyFrame("/usr/bin/myapp", "_start"), FrameKind::kRuntime);
  EXPECT_EQ(ClassifyFrame("/usr/bin/myapp", "__libc_start_main"), FrameKind::kRuntime);
  EXPECT_EQ(ClassifyFrame("/usr/bin/myapp", "start"), FrameKind::kApp);
}

// A Python frame is classified by its file: the standard library (any prefix's lib/python3.X,
// frozen modules) is the runtime, third-party packages the library, the rest the application.
// JavaScript and Ruby frames by file: node's own modules and Ruby's standard library are the
// runtime, node_modules and gems the library, the rest the application.
TEST(FrameClassifierTest, JsAndRubyFramesByFile) {
  auto kind = [](FrameLanguage l, const char* file) {
    Frame f;
    f.language = l;
    f.file = file;
    f.symbol = "f";
    return ClassifyFrame(f);
  };
  using L = FrameLanguage;
  EXPECT_EQ(kind(L::kJs, "node:internal/timers"), FrameKind::kRuntime);
  EXPECT_EQ(kind(L::kJs, "node:events"), FrameKind::kRuntime);
  EXPECT_EQ(kind(L::kJs, "/srv/app/node_modules/express/lib/router/index.js"), FrameKind::kLibrary);
  EXPECT_EQ(kind(L::kJs, "/srv/app/server.js"), FrameKind::kApp);
  EXPECT_EQ(kind(L::kJs, "file:///srv/app/server.mjs"), FrameKind::kApp);
  EXPECT_EQ(kind(L::kRuby, "<internal:kernel>"), FrameKind::kRuntime);
  EXPECT_EQ(kind(L::kRuby, "/usr/lib/ruby/3.1.0/webrick/httpserver.rb"), FrameKind::kRuntime);
  EXPECT_EQ(kind(L::kRuby, "/usr/lib/ruby/vendor_ruby/rack/handler/webrick.rb"),
            FrameKind::kLibrary);
  EXPECT_EQ(kind(L::kRuby, "/var/lib/gems/3.1.0/gems/rack-2.2.4/lib/rack/builder.rb"),
            FrameKind::kLibrary);
  EXPECT_EQ(kind(L::kRuby, "/srv/app.rb"), FrameKind::kApp);
  EXPECT_EQ(kind(L::kRuby, "/srv/ruby/3/app.rb"), FrameKind::kApp);
  // The Ruby VM's own library is its runtime, every frame of it.
  EXPECT_EQ(ClassifyFrame("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1", "vm_exec_core"),
            FrameKind::kRuntime);
}

TEST(FrameClassifierTest, JavaFramesByPackage) {
  auto kind = [](const char* method) {
    Frame f;
    f.language = FrameLanguage::kJava;
    f.symbol = method;
    f.file = "X.java";
    return ClassifyFrame(f);
  };
  for (const char* jdk :
       {"java.lang.Thread.sleep", "javax.swing.JComponent.paint", "jdk.internal.misc.Unsafe.park",
        "sun.net.httpserver.ServerImpl$Exchange.run",
        "com.sun.net.httpserver.Filter$Chain.doFilter"}) {
    EXPECT_EQ(kind(jdk), FrameKind::kRuntime) << jdk;
  }
  for (const char* app : {"SlowServer.nap", "SlowServer.lambda$main$1", "org.example.Shop.checkout",
                          "com.sunny.App.run", "javafx.App.start"}) {
    EXPECT_EQ(kind(app), FrameKind::kApp) << app;
  }
}

TEST(FrameClassifierTest, PythonFramesByFile) {
  for (const char* f :
       {"/usr/lib/python3.11/selectors.py", "/usr/lib/python3.11/socketserver.py",
        "/usr/lib/python3.11/asyncio/base_events.py", "/usr/local/lib/python3.12/threading.py",
        "/home/u/.pyenv/versions/3.12.1/lib/python3.12/socket.py",
        "/opt/py/lib64/python3.10/json/encoder.py", "/usr/lib/python3.13t/threading.py",
        "/opt/app/python311.zip/selectors.py", "<frozen importlib._bootstrap>", "<frozen runpy>"}) {
    EXPECT_EQ(ClassifyPythonFrame(f, "select"), FrameKind::kRuntime) << f;
  }
  for (const char* f : {"/usr/lib/python3/dist-packages/gunicorn/workers/sync.py",
                        "/srv/venv/lib/python3.11/site-packages/flask/app.py",
                        "/usr/local/lib/python3.12/site-packages/requests/api.py"}) {
    EXPECT_EQ(ClassifyPythonFrame(f, "run"), FrameKind::kLibrary) << f;
  }
  // A console script's module (pip's and Debian's entry-point wrappers) is its package's.
  EXPECT_EQ(ClassifyPythonFrame("/usr/bin/gunicorn", "<module>"), FrameKind::kLibrary);
  EXPECT_EQ(ClassifyPythonFrame("/srv/venv/bin/celery", "<module>"), FrameKind::kLibrary);
  EXPECT_EQ(ClassifyPythonFrame("/usr/local/bin/tool", "main"), FrameKind::kApp);
  for (const char* f : {"/srv/app.py", "app.py", "<string>", "<stdin>", "/srv/lib/python/x.py",
                        "/srv/python3.11/x.py", "/srv/lib/python3/x.py",
                        "/home/u/src/lib/pythonista.py", "/srv/lib/python3.x/x.py"}) {
    EXPECT_EQ(ClassifyPythonFrame(f, "handle"), FrameKind::kApp) << f;
  }
  Frame py;
  py.language = FrameLanguage::kPython;
  py.symbol = "clock_nanosleep";  // a native name means nothing for a Python frame
  py.file = "/srv/app.py";
  EXPECT_EQ(ClassifyFrame(py), FrameKind::kApp);
  py.file = "/usr/lib/python3.11/threading.py";
  EXPECT_EQ(ClassifyFrame(py), FrameKind::kRuntime);
  Frame native;
  native.module = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  native.symbol = "clock_nanosleep";
  EXPECT_EQ(ClassifyFrame(native), FrameKind::kSystem);
}

TEST(FrameClassifierTest, ModuleFileName) {
  EXPECT_EQ(ModuleFileName("/usr/lib/libc.so.6"), "libc.so.6");
  EXPECT_EQ(ModuleFileName("linux-vdso.so.1"), "linux-vdso.so.1");
  EXPECT_EQ(ModuleFileName(""), "");
}

// One rule for every reader and writer (report/names.h): the recorded name, else the
// executable's file name (records of older agents have no process_name).
TEST(FrameClassifierTest, ProcessNameIsTheRecordedNameElseTheExecutablesFileName) {
  EXPECT_EQ(ProcessName("", "/usr/bin/python3"), "python3");
  EXPECT_EQ(ProcessName("nginx: worker process", "/usr/sbin/nginx"), "nginx: worker process");
  EXPECT_EQ(ProcessName("", ""), "");
  static_assert(ProcessName("", "/opt/app/server") == "server", "a view, usable by the scanners");
}

}  // namespace
}  // namespace hangwatch::report
