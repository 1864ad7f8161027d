#include "fake_sysfs.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace verbstest {
namespace fs = std::filesystem;

namespace {

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

FakeSysfs::FakeSysfs() {
  std::string pattern = (fs::temp_directory_path() / "coll-fake-sysfs-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  root_ = pattern;
}

FakeSysfs::~FakeSysfs() {
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

void FakeSysfs::addDevice(const std::string& name, const std::string& bridge, const std::string& busId, int numaNode,
                          const std::string& localCpus) {
  const fs::path function = fs::path(root_) / "devices" / ("pci" + bridge.substr(0, 7)) / bridge / busId;
  fs::create_directories(function);
  if (numaNode >= -1) writeFile(function / "numa_node", std::to_string(numaNode));
  if (!localCpus.empty()) writeFile(function / "local_cpulist", localCpus);
  const fs::path classDir = ibdevPath(name);
  fs::create_directories(classDir);
  fs::create_symlink(function, classDir / "device");
}

void FakeSysfs::addNode(int node, const std::string& cpus) {
  const fs::path dir = fs::path(root_) / "devices/system/node" / ("node" + std::to_string(node));
  fs::create_directories(dir);
  writeFile(dir / "cpulist", cpus);
}

}  // namespace verbstest
