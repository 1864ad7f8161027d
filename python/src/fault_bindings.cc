// torch_collective._C's fault-tolerance functions (docs/pytorch.md, "Surviving a lost rank"):
// revoke, the two steps of a shrink, the library's flight recorder's dump, and the backend's entries
// in torch's Flight Recorder. torch_collective/__init__.py builds shrink_group on them.
#include "fault_bindings.h"

#include "library_call.h"
#include "process_group.h"

namespace py = pybind11;

namespace torch_collective {
namespace {

// The collective backend behind a Python group object (torch 1.x: the group; 2.x: its backend).
c10::intrusive_ptr<ProcessGroupCollective> collectiveBackendOf(const py::object& group, const char* function) {
  auto base = group.cast<c10::intrusive_ptr<BackendBase>>();
  auto* backend = dynamic_cast<ProcessGroupCollective*>(base.get());
  TORCH_CHECK(backend != nullptr, "torch_collective.", function, ": the group's backend is ", base->getBackendName(),
              ": expected a group of the \"collective\" backend");
  return c10::intrusive_ptr<ProcessGroupCollective>::reclaim_copy(backend);
}

}  // namespace

void registerFaultBindings(py::module& module) {
  module.def(
      "revoke", [](const py::object& group) { collectiveBackendOf(group, "revoke")->revoke(); }, py::arg("backend"),
      "collCommRevoke: every pending and later call of the group, on every rank, fails (\"revoked\").");
  module.def(
      "prepare_shrink",
      [](const py::object& group, const std::vector<int64_t>& exclude, bool abortFirst) {
        auto backend = collectiveBackendOf(group, "shrink_group");
        py::gil_scoped_release released;
        return backend->prepareShrink(exclude, abortFirst);
      },
      py::arg("backend"), py::arg("ranks_to_exclude"), py::arg("abort"),
      "collCommShrink behind the group's queued calls; returns the ranks the survivors agreed to leave out.\n"
      "The new backend waits in the old one until take_shrunk (or torch's shrink_group) asks for it.");
  module.def(
      "take_shrunk",
      [](const py::object& group, const std::vector<int64_t>& exclude) -> c10::intrusive_ptr<BackendBase> {
        return collectiveBackendOf(group, "shrink_group")->takeShrunk(exclude);
      },
      py::arg("backend"), py::arg("ranks_to_exclude"), "The backend prepare_shrink made, for that exact list.");
  module.def(
      "dump_trace",
      [](const py::object& group, const std::string& path) {
        auto backend = collectiveBackendOf(group, "dump_trace");
        checkResult(collCommDumpTrace(backend->handle(), path.empty() ? nullptr : path.c_str()));
      },
      py::arg("backend"), py::arg("path") = "",
      "collCommDumpTrace: this rank's flight recorder to path (empty: a file in COLL_TRACE_DIR).");
  module.attr("records_flight_recorder") = TORCH_COLLECTIVE_RECORDS_FLIGHTS != 0;
  module.def(
      "is_collective_backend",
      [](const py::object& group) {
        auto base = group.cast<c10::intrusive_ptr<BackendBase>>();
        return dynamic_cast<ProcessGroupCollective*>(base.get()) != nullptr;
      },
      py::arg("backend"), "Whether this backend object is the collective backend itself (not a wrapper).");
  module.def(
      "attach_flight_recorder",
      [](const py::object& group, const std::string& groupName, const std::string& groupDescription,
         const std::vector<uint64_t>& globalRanks, int globalRank) {
        return collectiveBackendOf(group, "attach_flight_recorder")
            ->attachFlightRecorder(groupName, groupDescription, globalRanks, globalRank);
      },
      py::arg("backend"), py::arg("group_name"), py::arg("group_desc"), py::arg("global_ranks"),
      py::arg("global_rank"),
      "Records the group's calls in torch's Flight Recorder (the \"collective\" instance) from now on;\n"
      "False where the recorder is off (TORCH_FR_BUFFER_SIZE=0) or this torch line has none.");
}

}  // namespace torch_collective
