// The ZeRO layer's C functions for Python. The communication calls are queued on the group's
// worker thread like its other calls (so they keep their order with them) and return a Work; the
// optimizer step and the norm run on the calling thread with the GIL released. Tensors on the CPU
// go to the host functions; tensors on one CUDA device to their ...OnStream forms, on the
// caller's current stream of that device (device_call.h), as the backend's collectives do.
#include "zero_bindings.h"

#include <c10/util/Exception.h>

#include <cstring>

#include "collective_zero.h"
#include "device_call.h"
#include "library_call.h"
#include "process_group.h"
#include "tensor_staging.h"

namespace py = pybind11;

namespace torch_collective {
namespace {

using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// The collective backend behind a Python group object: torch 1.x hands out our ProcessGroup
// itself, torch 2.x the Backend the Python side fetched with group._get_backend(device).
ProcessGroupCollective& backendOf(const py::object& group) {
  auto base = group.cast<c10::intrusive_ptr<BackendBase>>();
  auto* backend = dynamic_cast<ProcessGroupCollective*>(base.get());
  TORCH_CHECK(backend != nullptr, "torch_collective.zero: the group's backend is ", base->getBackendName(),
              ": expected a group of the \"collective\" backend");
  return *backend;
}

// A flat buffer the ZeRO functions may use as it is: dense, contiguous, of a float type (its
// device is checked with the call's other tensors: deviceCallFor).
collDataType_t flatType(const at::Tensor& tensor, const char* function, const char* what) {
  checkDenseTensor(tensor, function);
  TORCH_CHECK(tensor.is_contiguous(), function, ": ", what, " must be contiguous");
  auto type = tensor.scalar_type();
  TORCH_CHECK(type == at::kFloat || type == at::kHalf || type == at::kBFloat16, function, ": ", what, " has dtype ",
              type, ": expected float32, float16 or bfloat16");
  return collTypeOf(tensor, Combines::kYes, function);
}

// Checks a flat buffer (`buffer`, named `what`) used with this rank's shard of partition p: both
// usable flat buffers of one dtype, the shard of the partition's shard length. Returns the dtype.
collDataType_t checkWithShard(const at::Tensor& buffer, const char* what, const at::Tensor& shard,
                              const char* shardName, const collZeroPartition_t& p, const char* function) {
  collDataType_t type = flatType(buffer, function, what);
  flatType(shard, function, shardName);
  TORCH_CHECK(buffer.scalar_type() == shard.scalar_type(), function, ": dtypes differ (", buffer.scalar_type(), " and ",
              shard.scalar_type(), ")");
  TORCH_CHECK(size_t(shard.numel()) == p.shardCount, function, ": the shard has ", shard.numel(),
              " elements: expected the partition's shardCount ", p.shardCount);
  return type;
}

// Checks that `buffer` (named `what`) is the whole padded flat buffer of partition p.
void checkWholeBuffer(const at::Tensor& buffer, const char* what, const collZeroPartition_t& p, const char* function) {
  TORCH_CHECK(size_t(buffer.numel()) == p.paddedCount, function, ": ", what, " has ", buffer.numel(),
              " elements: expected the partition's padded length ", p.paddedCount);
}

size_t checkedCount(int64_t value, const char* function, const char* what) {
  TORCH_CHECK(value >= 0, function, ": ", what, " ", value, " is negative");
  return size_t(value);
}

void* dataOf(const at::Tensor& t) { return t.numel() == 0 ? nullptr : t.data_ptr(); }

}  // namespace

void registerZeroBindings(py::module& module) {
  py::class_<collZeroPartition_t>(module, "ZeroPartition",
                                  "How the flat buffer splits across ranks (collZeroPartitionInit).")
      .def(py::init([](int64_t total, int nranks, int rank, int64_t align) {
             collZeroPartition_t p{};
             checkResult(collZeroPartitionInit(&p, checkedCount(total, "ZeroPartition", "total"), nranks, rank,
                                               checkedCount(align, "ZeroPartition", "align")));
             return p;
           }),
           py::arg("total"), py::arg("nranks"), py::arg("rank"), py::arg("align") = 0)
      .def_readonly("total", &collZeroPartition_t::totalCount)
      .def_readonly("padded", &collZeroPartition_t::paddedCount)
      .def_readonly("shard", &collZeroPartition_t::shardCount)
      .def_readonly("offset", &collZeroPartition_t::shardOffset)
      .def_readonly("nranks", &collZeroPartition_t::nranks)
      .def_readonly("rank", &collZeroPartition_t::rank);

  module.def(
      "zero_reduce_scatter_range",
      [](const py::object& group, at::Tensor bucket, int64_t begin, at::Tensor gradShard, bool accumulate, bool average,
         collZeroPartition_t p) -> WorkPtr {
        const char* fn = "zero_reduce_scatter_range";
        collDataType_t type = checkWithShard(bucket, "bucket", gradShard, "grad_shard", p, fn);
        size_t first = checkedCount(begin, fn, "begin"), count = size_t(bucket.numel());
        void *data = dataOf(bucket), *shard = dataOf(gradShard);
        collRedOp_t op = average ? collAvg : collSum;
        return backendOf(group).enqueueLibraryCall(fn, {bucket, gradShard}, [=](collComm_t comm, collStream_t stream) {
          return collZeroReduceScatterRangeOnStream(data, first, count, shard, accumulate ? 1 : 0, type, op, &p, comm,
                                                    stream);
        });
      },
      py::arg("group"), py::arg("bucket"), py::arg("begin"), py::arg("grad_shard"), py::arg("accumulate"),
      py::arg("average"), py::arg("partition"),
      "Reduces this rank's gradients of the flat range [begin, begin+bucket.numel()) into the owning shards.");

  module.def(
      "zero_reduce_scatter_gradients",
      [](const py::object& group, at::Tensor grads, at::Tensor gradShard, int64_t bucketCount, bool accumulate,
         bool average, collZeroPartition_t p) -> WorkPtr {
        const char* fn = "zero_reduce_scatter_gradients";
        collDataType_t type = checkWithShard(grads, "grads", gradShard, "grad_shard", p, fn);
        checkWholeBuffer(grads, "grads", p, fn);
        size_t bucket = checkedCount(bucketCount, fn, "bucket_count");
        void *data = dataOf(grads), *shard = dataOf(gradShard);
        collRedOp_t op = average ? collAvg : collSum;
        return backendOf(group).enqueueLibraryCall(fn, {grads, gradShard}, [=](collComm_t comm, collStream_t stream) {
          return collZeroReduceScatterGradientsOnStream(data, shard, bucket, accumulate ? 1 : 0, type, op, &p, comm,
                                                        stream);
        });
      },
      py::arg("group"), py::arg("grads"), py::arg("grad_shard"), py::arg("bucket_count"), py::arg("accumulate"),
      py::arg("average"), py::arg("partition"),
      "Reduces the whole flat gradient buffer into the shards, bucket by bucket (grads is scratch).");

  module.def(
      "zero_all_gather_range",
      [](const py::object& group, at::Tensor shard, int64_t begin, at::Tensor out, collZeroPartition_t p) -> WorkPtr {
        const char* fn = "zero_all_gather_range";
        collDataType_t type = checkWithShard(out, "out", shard, "shard", p, fn);
        size_t first = checkedCount(begin, fn, "begin"), count = size_t(out.numel());
        const void* mine = dataOf(shard);
        void* data = dataOf(out);
        return backendOf(group).enqueueLibraryCall(fn, {shard, out}, [=](collComm_t comm, collStream_t stream) {
          return collZeroAllGatherRangeOnStream(mine, first, count, data, type, &p, comm, stream);
        });
      },
      py::arg("group"), py::arg("shard"), py::arg("begin"), py::arg("out"), py::arg("partition"),
      "Gathers the flat range [begin, begin+out.numel()) from the shards that own it into out.");

  module.def(
      "zero_all_gather_range_in_place",
      [](const py::object& group, int64_t begin, at::Tensor out, collZeroPartition_t p) -> WorkPtr {
        const char* fn = "zero_all_gather_range_in_place";
        collDataType_t type = flatType(out, fn, "out");
        size_t first = checkedCount(begin, fn, "begin"), count = size_t(out.numel());
        void* data = dataOf(out);
        return backendOf(group).enqueueLibraryCall(fn, {out}, [=](collComm_t comm, collStream_t stream) {
          return collZeroAllGatherRangeInPlaceOnStream(first, count, data, type, &p, comm, stream);
        });
      },
      py::arg("group"), py::arg("begin"), py::arg("out"), py::arg("partition"),
      "As zero_all_gather_range, with this rank's piece of the range already in out (its shard kept elsewhere).");

  module.def(
      "zero_all_gather_parameters",
      [](const py::object& group, at::Tensor shard, at::Tensor params, int64_t bucketCount,
         collZeroPartition_t p) -> WorkPtr {
        const char* fn = "zero_all_gather_parameters";
        collDataType_t type = checkWithShard(params, "params", shard, "shard", p, fn);
        checkWholeBuffer(params, "params", p, fn);
        size_t bucket = checkedCount(bucketCount, fn, "bucket_count");
        const void* mine = dataOf(shard);
        void* data = dataOf(params);
        return backendOf(group).enqueueLibraryCall(fn, {shard, params}, [=](collComm_t comm, collStream_t stream) {
          return collZeroAllGatherParametersOnStream(mine, data, bucket, type, &p, comm, stream);
        });
      },
      py::arg("group"), py::arg("shard"), py::arg("params"), py::arg("bucket_count"), py::arg("partition"),
      "Gathers every rank's shard into the whole flat parameter buffer (in place when shard is its slice).");

  module.def(
      "zero_optimizer_step",
      [](const std::string& kind, at::Tensor master, at::Tensor grad, c10::optional<at::Tensor> state0,
         c10::optional<at::Tensor> state1, c10::optional<at::Tensor> paramOut, double lr, double beta1, double beta2,
         double eps, double weightDecay, double momentum, double dampening, bool nesterov, int64_t step,
         double gradScale) {
        const char* fn = "zero_optimizer_step";
        collZeroStepConfig_t config{};
        if (kind == "adam") {
          config.optimizer = collZeroAdam;
        } else if (kind == "adamw") {
          config.optimizer = collZeroAdamW;
        } else {
          TORCH_CHECK(kind == "sgd", fn, ": kind '", kind, "': expected adam, adamw or sgd");
          config.optimizer = collZeroSgd;
        }
        config.lr = lr;
        config.beta1 = beta1;
        config.beta2 = beta2;
        config.eps = eps;
        config.weightDecay = weightDecay;
        config.momentum = momentum;
        config.dampening = dampening;
        config.nesterov = nesterov ? 1 : 0;
        config.step = step;
        config.gradScale = gradScale;
        checkDenseTensor(master, fn);
        TORCH_CHECK(master.scalar_type() == at::kFloat && master.is_contiguous(), fn,
                    ": master must be a contiguous float32 tensor");
        std::vector<at::Tensor> tensors{master, grad};
        for (const c10::optional<at::Tensor>* t : {&state0, &state1, &paramOut})
          if (t->has_value()) tensors.push_back(**t);
        const std::shared_ptr<DeviceCall> device = deviceCallFor(fn, tensors, /*streams=*/nullptr);
        collDataType_t gradType = flatType(grad, fn, "grad");
        const int64_t n = master.numel();
        auto stateData = [&](const c10::optional<at::Tensor>& s, const char* what) -> float* {
          if (!s.has_value()) return nullptr;
          TORCH_CHECK(s->scalar_type() == at::kFloat && s->is_contiguous() && s->numel() == n, fn, ": ", what,
                      " must be a contiguous float32 tensor of ", n, " elements");
          return n == 0 ? nullptr : s->data_ptr<float>();
        };
        TORCH_CHECK(grad.numel() == n, fn, ": grad has ", grad.numel(), " elements: expected ", n);
        float* s0 = stateData(state0, "state0");
        float* s1 = stateData(state1, "state1");
        void* out = nullptr;
        collDataType_t outType = collFloat32;
        if (paramOut.has_value()) {
          outType = flatType(*paramOut, fn, "param_out");
          TORCH_CHECK(paramOut->numel() == n, fn, ": param_out has ", paramOut->numel(), " elements: expected ", n);
          out = dataOf(*paramOut);
        }
        float* m = n == 0 ? nullptr : master.data_ptr<float>();
        const void* g = dataOf(grad);
        const collStream_t stream = streamOf(device);
        py::gil_scoped_release release;
        // With the tensors' device current: the library reads torch's default stream as the
        // current device's.
        runWhereCallRuns(device, [&] {
          checkResult(collZeroOptimizerStepOnStream(&config, m, g, gradType, s0, s1, out, outType, size_t(n), stream));
        });
      },
      py::arg("kind"), py::arg("master"), py::arg("grad"), py::arg("state0"), py::arg("state1"), py::arg("param_out"),
      py::arg("lr"), py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("eps") = 1e-8,
      py::arg("weight_decay") = 0.0, py::arg("momentum") = 0.0, py::arg("dampening") = 0.0, py::arg("nesterov") = false,
      py::arg("step") = 1, py::arg("grad_scale") = 1.0, "One optimizer update of a shard (collZeroOptimizerStep).");

  module.def(
      "zero_squared_norm",
      [](at::Tensor data) {
        collDataType_t type = flatType(data, "zero_squared_norm", "data");
        const std::shared_ptr<DeviceCall> device = deviceCallFor("zero_squared_norm", data, /*streams=*/nullptr);
        const void* d = dataOf(data);
        size_t n = size_t(data.numel());
        // The results where the data is (on a GPU, written on the caller's stream); the values
        // come to the host as torch's .item() brings them, after the stream's work.
        at::Tensor results = at::empty({2}, data.options().dtype(at::kDouble));
        double* sumOfSquares = results.data_ptr<double>();
        {
          py::gil_scoped_release release;
          runWhereCallRuns(device, [&] {
            checkResult(collZeroSquaredNormOnStream(d, type, n, sumOfSquares, reinterpret_cast<int*>(sumOfSquares + 1),
                                                    streamOf(device)));
          });
        }
        const at::Tensor host = results.cpu();
        const double sum = host.data_ptr<double>()[0];
        int nonFinite = 0;
        std::memcpy(&nonFinite, host.data_ptr<double>() + 1, sizeof nonFinite);
        return py::make_tuple(sum, nonFinite != 0);
      },
      py::arg("data"), "(sum of squares, whether an element is Inf or NaN) of a flat tensor.");
}

}  // namespace torch_collective
