#include "topo/sysfs_read.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <memory>

namespace coll {
namespace topo {

std::string readFirstLine(const std::string& path, const std::string& fallback) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return fallback;
  return line;
}

long readNumber(const std::string& path, long fallback) {
  std::string text = readFirstLine(path);
  if (text.empty()) return fallback;
  char* end = nullptr;
  long value = strtol(text.c_str(), &end, 0);  // base 0: sysfs writes ids as 0x...
  while (end != nullptr && isspace(static_cast<unsigned char>(*end))) ++end;
  return end != nullptr && end != text.c_str() && *end == '\0' ? value : fallback;
}

std::vector<std::string> listDirectory(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(path.c_str()), closedir);
  std::vector<std::string> names;
  if (!dir) return names;
  while (const dirent* entry = readdir(dir.get())) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool isPciBusId(const std::string& name) {
  // dddd:bb:dd.f
  static const char kShape[] = "xxxx:xx:xx.x";
  if (name.size() != sizeof(kShape) - 1) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    bool hex = isxdigit(static_cast<unsigned char>(name[i])) != 0;
    if (kShape[i] == 'x' ? !hex : name[i] != kShape[i]) return false;
  }
  return true;
}

std::string pciBusIdBehind(const std::string& sysfsPath) {
  char resolved[PATH_MAX];
  if (realpath(sysfsPath.c_str(), resolved) == nullptr) return "";
  std::string path = resolved;
  // Walk up from the device itself: the nearest PCI component is the function it sits on
  // (a virtio or USB device hangs below one).
  while (!path.empty()) {
    size_t slash = path.rfind('/');
    std::string component = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (isPciBusId(component)) return component;
    if (slash == std::string::npos || slash == 0) break;
    path.erase(slash);
  }
  return "";
}

}  // namespace topo
}  // namespace coll
