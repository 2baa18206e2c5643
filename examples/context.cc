// What a hang's pass was serving: labels around the program's work, and the source a loop
// dispatches with its callback (hangwatch/context.h). One pass decodes a thumbnail for 300 ms
// (over the 100 ms threshold); the callback prints what the hang says about it.
// docs/context.md shows this file.
#include <hangwatch/context.h>
#include <hangwatch/hangwatch.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

void DecodeThumbnail() {
  hangwatch::ScopedLabel label("thumbnail.decode");  // the innermost label: the hang's own
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

int main() {
  hangwatch::Config config;
  config.threshold = std::chrono::milliseconds(100);
  config.log_hangs = false;
  config.on_hang = [](const hangwatch::HangRecord& hang) {
    std::string path;
    for (const std::string& label : hang.context.label_path) {
      path += (path.empty() ? "" : " > ") + label;
    }
    std::printf("hang in %s (%s), source %s, callback %s\n", hang.context.label.c_str(),
                path.c_str(), hang.context.source.c_str(), hang.context.callback.c_str());
  };
  if (auto status = hangwatch::Start(config); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  {
    hangwatch::WorkScope pass;
    hangwatch::ScopedLabel request("gallery.open");
    // What a loop adapter does for each dispatch (the GLib, libuv, Qt and asio ones do it).
    hangwatch::SetPassSource("thumbnail-timer", reinterpret_cast<const void*>(&DecodeThumbnail));
    DecodeThumbnail();
  }
  hangwatch::Stop();
  return hangwatch::GetStats().hangs == 1 ? 0 : 1;
}
