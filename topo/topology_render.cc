#include "topo/topology_render.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace coll {
namespace topo {

namespace {

std::string counted(size_t count, const char* singular, const char* plural) {
  return std::to_string(count) + " " + (count == 1 ? singular : plural);
}

std::string hex4(unsigned value) {
  char text[8];
  snprintf(text, sizeof(text), "%04x", value & 0xffffu);
  return text;
}

std::string gibibytes(uint64_t bytes) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

std::string nodeName(int node) { return node >= 0 ? "NUMA " + std::to_string(node) : "NUMA ?"; }

std::string countsLine(const Topology& t) {
  return counted(t.packages.size(), "package", "packages") + ", " +
         counted(t.numaNodes.size(), "NUMA node", "NUMA nodes") + ", " + counted(t.cores.size(), "core", "cores") +
         ", " + counted(t.allCpus().size(), "PU", "PUs");
}

std::string deviceLine(const PciDevice& d) {
  std::string line = d.busId + "  " + hex4(d.vendorId) + ":" + hex4(d.deviceId) + "  " + pciClassName(d.classId) +
                     "  " + nodeName(d.numaNode) + "  cpus " + (d.localCpus.empty() ? "?" : formatCpuList(d.localCpus));
  if (!d.osNames.empty()) line += "  " + joined(d.osNames, " ");
  return line;
}

void appendDevices(const Topology& t, PciKind kind, const char* title, std::string* text) {
  std::vector<const PciDevice*> devices = t.devicesOfKind(kind);
  *text += std::string(title) + (devices.empty() ? ": none\n" : ":\n");
  int index = 0;
  for (const PciDevice* d : devices) {
    std::string label = kind == PciKind::kOther ? "" : std::string(pciKindName(kind)) + std::to_string(index++) + "  ";
    *text += "  " + label + deviceLine(*d) + "\n";
  }
}

std::string interfaceLine(const NetInterface& i, size_t nameWidth) {
  std::string line = i.name + std::string(nameWidth > i.name.size() ? nameWidth - i.name.size() : 0, ' ') + "  " +
                     (i.up ? "up  " : "down") + "  ";
  if (i.isVirtual) {
    line += i.loopback ? "virtual, loopback" : "virtual";
  } else {
    line += i.pciBusId.empty() ? "not on PCI" : "PCI " + i.pciBusId;
  }
  if (!i.addresses.empty()) line += "  " + joined(i.addresses, " ");
  return line;
}

void writeCpuArray(const char* name, const CpuList& cpus, JsonWriter* json) {
  json->key(name).beginArray(JsonWriter::Layout::kInline);
  for (int cpu : cpus) json->value(cpu);
  json->endArray();
}

void writeNode(const char* name, int node, JsonWriter* json) {
  json->key(name);
  if (node >= 0) {
    json->value(node);
  } else {
    json->null();
  }
}

void writeHardware(const Topology& t, JsonWriter* json) {
  json->key("packages").beginArray();
  for (const Package& p : t.packages) {
    json->beginObject(JsonWriter::Layout::kInline).field("os_index", p.osIndex);
    writeCpuArray("cpus", p.cpus, json);
    json->endObject();
  }
  json->endArray().key("numa_nodes").beginArray();
  for (const NumaNode& n : t.numaNodes) {
    json->beginObject(JsonWriter::Layout::kInline).field("os_index", n.osIndex).field("memory_bytes", n.memoryBytes);
    writeCpuArray("cpus", n.cpus, json);
    json->endObject();
  }
  json->endArray().key("cores").beginArray();
  for (const Core& c : t.cores) {
    json->beginObject(JsonWriter::Layout::kInline).field("os_index", c.osIndex).field("package", c.package);
    writeNode("numa_node", c.numaNode, json);
    writeCpuArray("pus", c.pus, json);
    json->endObject();
  }
  json->endArray();
}

void writeDevices(const Topology& t, JsonWriter* json) {
  json->key("pci_devices").beginArray();
  for (const PciDevice& d : t.pciDevices) {
    json->beginObject().field("bus_id", d.busId).field("kind", pciKindName(d.kind));
    json->field("class", pciClassName(d.classId)).field("class_id", "0x" + hex4(d.classId));
    json->field("vendor_id", "0x" + hex4(d.vendorId)).field("device_id", "0x" + hex4(d.deviceId));
    writeNode("numa_node", d.numaNode, json);
    writeCpuArray("local_cpus", d.localCpus, json);
    json->key("os_names").beginArray(JsonWriter::Layout::kInline);
    for (const std::string& name : d.osNames) json->value(name);
    json->endArray().endObject();
  }
  json->endArray().key("interfaces").beginArray();
  for (const NetInterface& i : t.interfaces) {
    json->beginObject().field("name", i.name).field("up", i.up).field("loopback", i.loopback);
    json->field("virtual", i.isVirtual).key("pci_bus_id");
    if (i.pciBusId.empty()) {
      json->null();
    } else {
      json->value(i.pciBusId);
    }
    json->key("addresses").beginArray(JsonWriter::Layout::kInline);
    for (const std::string& address : i.addresses) json->value(address);
    json->endArray().endObject();
  }
  json->endArray();
}

}  // namespace

std::string topologyText(const Topology& t) {
  std::string text = "host " + t.hostname + " (topology from " + t.source + "): " + countsLine(t) + "\n";
  for (const Package& p : t.packages) {
    text += "package " + std::to_string(p.osIndex) + ": cpus " + formatCpuList(p.cpus) + "\n  cores (their PUs):";
    for (const Core& c : t.cores) {
      if (c.package == p.osIndex) text += " {" + formatCpuList(c.pus) + "}";
    }
    text += "\n";
  }
  for (const NumaNode& n : t.numaNodes) {
    text += "NUMA node " + std::to_string(n.osIndex) + ": cpus " + (n.cpus.empty() ? "none" : formatCpuList(n.cpus)) +
            ", " + gibibytes(n.memoryBytes) + "\n";
  }
  appendDevices(t, PciKind::kGpu, "GPUs", &text);
  appendDevices(t, PciKind::kNic, "NICs", &text);
  appendDevices(t, PciKind::kOther, "other PCI devices", &text);
  text += "network interfaces:" + std::string(t.interfaces.empty() ? " none\n" : "\n");
  size_t nameWidth = 0;
  for (const NetInterface& i : t.interfaces) nameWidth = std::max(nameWidth, i.name.size());
  for (const NetInterface& i : t.interfaces) text += "  " + interfaceLine(i, nameWidth) + "\n";
  text += "binding of this process (pid " + std::to_string(getpid()) + "): cpus " +
          (t.processCpus.empty() ? "unknown" : formatCpuList(t.processCpus)) + "\n";
  return text;
}

void writeTopologyMembers(const Topology& t, JsonWriter* json) {
  json->field("host", t.hostname).field("source", t.source);
  json->key("counts").beginObject(JsonWriter::Layout::kInline);
  json->field("packages", t.packages.size()).field("numa_nodes", t.numaNodes.size());
  json->field("cores", t.cores.size()).field("pus", t.allCpus().size());
  json->field("gpus", t.devicesOfKind(PciKind::kGpu).size()).field("nics", t.devicesOfKind(PciKind::kNic).size());
  json->endObject();
  writeHardware(t, json);
  writeDevices(t, json);
  json->key("binding").beginObject(JsonWriter::Layout::kInline).field("pid", static_cast<long>(getpid()));
  writeCpuArray("cpus", t.processCpus, json);
  json->endObject();
}

std::string topologyJson(const Topology& t) {
  JsonWriter json;
  json.beginObject();
  writeTopologyMembers(t, &json);
  json.endObject();
  return json.str();
}

std::string topologySummary(const Topology& t) {
  std::string text = "host " + t.hostname + " (" + t.source + "): " + countsLine(t);
  for (PciKind kind : {PciKind::kGpu, PciKind::kNic}) {
    std::vector<std::string> items;
    for (const PciDevice* d : t.devicesOfKind(kind)) {
      items.push_back((d->osNames.empty() ? d->busId : joined(d->osNames, "/")) + " " + nodeName(d->numaNode));
    }
    text += std::string("; ") + pciKindName(kind) + "s: " + (items.empty() ? "none" : joined(items, ", "));
  }
  return text + "; bound to cpus " + (t.processCpus.empty() ? "?" : formatCpuList(t.processCpus));
}

}  // namespace topo
}  // namespace coll
