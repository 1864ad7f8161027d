// The Python extension torch_collective._C. torch_collective/__init__.py does the rendezvous
// through torch's store and registers the backend; this module only makes ids and backends.
#include <torch/csrc/utils/pybind.h>

#include "communicator.h"
#include "device_call.h"
#include "fault_bindings.h"
#include "process_group.h"
#include "work_queue.h"
#include "zero_bindings.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, module) {
  module.doc() = "libcollective as a torch.distributed backend (see the torch_collective package)";
  // The backend object is handed to Python as torch's own ProcessGroup (1.x) or Backend (2.x)
  // type, which torch.distributed registers with pybind11.
  py::module::import("torch.distributed");

  module.def(
      "get_unique_id", [] { return py::bytes(torch_collective::Communicator::newUniqueId()); },
      "A new libcollective unique id (bytes); also starts the rendezvous server it names.");
  module.def(
      "create_backend",
      [](int rank, int size, const std::string& uniqueId, int timeoutMs,
         c10::intrusive_ptr<c10d::Store> store) -> c10::intrusive_ptr<torch_collective::BackendBase> {
        return c10::make_intrusive<torch_collective::ProcessGroupCollective>(rank, size, uniqueId, timeoutMs,
                                                                             std::move(store));
      },
      py::arg("rank"), py::arg("size"), py::arg("unique_id"), py::arg("timeout_ms"), py::arg("store"),
      // Joining waits for every rank: let other Python threads run meanwhile.
      py::call_guard<py::gil_scoped_release>(),
      "Joins the communicator named by unique_id and returns it as a torch.distributed backend; the\n"
      "group's store carries the monitored barrier's arrivals.");
  // Groups the program never destroyed are drained before the interpreter finalizes (see
  // WorkQueue::shutdownAll). Registered after torch's own handlers, so it runs before them.
  py::module::import("atexit").attr("register")(py::cpp_function([] {
    py::gil_scoped_release released;
    torch_collective::WorkQueue::shutdownAll();
  }));
  module.def(
      "_run_counts",
      [] {
        torch_collective::WorkQueue::RunCounts counts = torch_collective::WorkQueue::runCounts();
        py::dict result;
        result["by_caller"] = counts.byCaller;
        result["by_worker"] = counts.byWorker;
        return result;
      },
      "How many batches of calls, process-wide so far, ran on the thread that waited for them\n"
      "(by_caller) and how many the backend's worker thread ran (by_worker); for tests.");
  torch_collective::registerZeroBindings(module);
  torch_collective::registerFaultBindings(module);
  module.attr("torch_version") = TORCH_VERSION;
  // Whether this build takes CUDA tensors (torch with CUDA and the CUDA toolkit at build time).
  module.attr("cuda_support") = torch_collective::hasCudaSupport();
}
