// A shared library loaded with dlopen by the module-map and in-process symbolizer tests.
namespace {
__attribute__((noinline)) int PluginHidden(int x) { return x * 3 + 1; }
}  // namespace

extern "C" __attribute__((visibility("default"), noinline)) int symbols_test_plugin_entry(int x) {
  return PluginHidden(x) + 2;
}
