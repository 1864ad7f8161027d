// torch_collective._C's fault-tolerance functions (docs/pytorch.md, "Surviving a lost rank"):
// revoke, the two steps of a shrink, and the flight recorder's dump. torch_collective/__init__.py
// builds shrink_group on them.
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
}

}  // namespace torch_collective
