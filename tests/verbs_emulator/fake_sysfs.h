// A made-up sysfs tree in a temporary directory: RDMA devices on PCI functions with a NUMA node
// and local CPUs, and NUMA nodes with their CPUs, laid out as Linux lays them out, so that the
// verbs transport's nearness rule (transport/verbs/verbs_locality.h) reads real files. The
// emulator points its devices' ibdev_path into it (COLL_VERBS_EMU_SYSFS).
#pragma once

#include <string>

namespace verbstest {

class FakeSysfs {
 public:
  FakeSysfs();  // an empty tree under a fresh temporary directory
  ~FakeSysfs();
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }
  // <root>/class/infiniband/<name>/device -> <root>/devices/pci<domain:bus>/<bridge>/<busId>,
  // which holds numa_node (omitted when numaNode < -1) and local_cpulist (omitted when empty).
  void addDevice(const std::string& name, const std::string& bridge, const std::string& busId, int numaNode,
                 const std::string& localCpus);
  // <root>/devices/system/node/node<node>/cpulist.
  void addNode(int node, const std::string& cpus);
  std::string ibdevPath(const std::string& name) const { return root_ + "/class/infiniband/" + name; }

 private:
  std::string root_;
};

}  // namespace verbstest
