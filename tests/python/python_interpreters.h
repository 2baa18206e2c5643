// The CPython interpreters the python/ tests run: Debian's /usr/bin/python3.11 first, and
// other minor versions where they are installed (/usr/bin, /usr/local/bin, pyenv's versions).
#ifndef HANGWATCH_TESTS_PYTHON_PYTHON_INTERPRETERS_H_
#define HANGWATCH_TESTS_PYTHON_PYTHON_INTERPRETERS_H_

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace hangwatch::python::testing {

// The path of an installed python3.<minor>, or "" when there is none.
inline std::string FindPython(int minor) {
  const std::string name = "python3." + std::to_string(minor);
  for (const char* dir : {"/usr/bin/", "/usr/local/bin/"}) {
    const std::string path = dir + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr) return "";
  const std::string versions = std::string(home) + "/.pyenv/versions";
  DIR* d = opendir(versions.c_str());
  if (d == nullptr) return "";
  std::string found;
  const std::string prefix = "3." + std::to_string(minor) + ".";
  while (dirent* e = readdir(d)) {
    const std::string v = e->d_name;
    if (v.rfind(prefix, 0) != 0) continue;
    const std::string path = versions + "/" + v + "/bin/" + name;
    if (access(path.c_str(), X_OK) == 0) found = path;
  }
  closedir(d);
  return found;
}

}  // namespace hangwatch::python::testing

#endif  // HANGWATCH_TESTS_PYTHON_PYTHON_INTERPRETERS_H_
