// All-reductions the library has no reduction for, composed from collAllGather and a fold on this
// rank. Every rank receives every rank's tensor, so each moves (ranks - 1) times the tensor's bytes
// into each rank where a ring all-reduce moves about twice the bytes:
// - the bitwise ops (BAND, BOR, BXOR; the library reduces with sum, product, min, max and average
//   only, and its public op enum stays as it is): fine for the flags and masks they are used on;
// - sparse (COO) tensors, as Gloo does them: every rank's indices and values are gathered and the
//   sum is their coalesced union; what moves is proportional to the non-zeros, not the size.
#include <c10/util/Exception.h>

#include <algorithm>

#include "library_call.h"
#include "process_group.h"

namespace torch_collective {
namespace {

const char* bitwiseName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    default:
      return nullptr;
  }
}

// Folds the `ranks` rows of `gathered` into `result` with `op`, in rank order (the order does not
// change a bitwise result, but a fixed one keeps every rank's work identical).
void foldBitwise(const at::Tensor& gathered, int64_t ranks, c10d::ReduceOp::RedOpType op, const at::Tensor& result) {
  at::Tensor rows = gathered.view({ranks, result.numel()});
  at::Tensor folded = rows[0].clone();
  for (int64_t r = 1; r < ranks; ++r) {
    if (op == c10d::ReduceOp::BAND) {
      folded.bitwise_and_(rows[r]);
    } else if (op == c10d::ReduceOp::BOR) {
      folded.bitwise_or_(rows[r]);
    } else {
      folded.bitwise_xor_(rows[r]);
    }
  }
  result.copy_(folded.view(result.sizes()));
}

// What every rank says about its sparse tensor before the indices and values move, in one record
// of fixed length so that one equal-count all-gather carries it: the non-zeros, the sparse and
// dense dimensions and the sizes.
constexpr int64_t kMaxSparseDims = 12;
constexpr int64_t kRecordLength = 3 + kMaxSparseDims;

at::Tensor sparseRecordOf(const at::Tensor& sparse) {
  at::Tensor record = at::zeros({kRecordLength}, at::kLong);
  int64_t* fields = record.data_ptr<int64_t>();
  fields[0] = sparse._nnz();
  fields[1] = sparse.sparse_dim();
  fields[2] = sparse.dense_dim();
  for (int64_t d = 0; d < sparse.dim(); ++d) fields[3 + d] = sparse.size(d);
  return record;
}

// Every rank sees every record, so every rank raises the same error for the same mismatch and no
// rank goes on to move data: the group stays usable.
void checkSparseRecords(const at::Tensor& records, int64_t ranks, const at::Tensor& mine) {
  for (int64_t r = 0; r < ranks; ++r) {
    at::Tensor theirs = records[r];
    TORCH_CHECK(at::equal(theirs.narrow(0, 1, kRecordLength - 1), mine.narrow(0, 1, kRecordLength - 1)),
                "collective backend: sparse allreduce: rank ", r, "'s tensor has sizes or dimensions ",
                theirs.narrow(0, 1, kRecordLength - 1), " that differ from this rank's ",
                mine.narrow(0, 1, kRecordLength - 1), " (sparse dim, dense dim, sizes)");
  }
}

// Gathers `part` (rows along dimension `dim`, as many as `rows`) from every rank, each padded to
// `maxRows` rows so that one equal-count all-gather moves them; returns the rows of every rank
// laid end to end, in rank order, without the padding. Elements move as bytes.
at::Tensor gatherRows(const at::Tensor& part, int64_t dim, const std::vector<int64_t>& rows, int64_t maxRows,
                      collComm_t comm) {
  std::vector<int64_t> paddedSizes = part.sizes().vec();
  paddedSizes[dim] = maxRows;
  at::Tensor padded = at::zeros(paddedSizes, part.options());
  padded.narrow(dim, 0, part.size(dim)).copy_(part);
  paddedSizes.insert(paddedSizes.begin(), static_cast<int64_t>(rows.size()));
  at::Tensor gathered = at::empty(paddedSizes, part.options());
  const size_t bytes = static_cast<size_t>(padded.numel()) * padded.element_size();
  checkResult(collAllGather(padded.data_ptr(), gathered.data_ptr(), bytes, collUint8, comm, nullptr));
  std::vector<at::Tensor> pieces;
  for (size_t r = 0; r < rows.size(); ++r) pieces.push_back(gathered[r].narrow(dim, 0, rows[r]));
  return at::cat(pieces, dim);
}

}  // namespace

bool ProcessGroupCollective::isBitwiseOp(const c10d::ReduceOp& reduceOp) {
  return bitwiseName(reduceOp.op_) != nullptr;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::bitwiseAllreduce(const at::Tensor& tensor,
                                                                        const c10d::ReduceOp& reduceOp) {
  const c10d::ReduceOp::RedOpType op = reduceOp.op_;
  // As Gloo: bitwise ops are defined on integers and bool only.
  TORCH_CHECK(at::isIntegralType(tensor.scalar_type(), /*includeBool=*/true),
              "collective backend: allreduce: ReduceOp.", bitwiseName(op), " takes integer or bool tensors, got ",
              tensor.scalar_type());
  std::shared_ptr<DeviceCall> device = deviceCallOf("allreduce", {tensor});
  const IssueOnCallStream issuing(device);
  collStream_t stream = streamOf(device);
  StagedTensor in(tensor);
  at::Tensor gathered = flatBufferFor(tensor, getSize());
  const int64_t ranks = getSize();
  collComm_t comm = comm_.handle();
  // Moved as bytes: a bitwise fold needs no element type from the library, so every integer width
  // torch has (int16 too) works.
  return enqueue(
      c10d::OpType::ALLREDUCE, {tensor}, {tensor}, device,
      [=] { checkResult(collAllGather(in.data(), gathered.data_ptr(), in.bytes(), collUint8, comm, stream)); },
      [=] { foldBitwise(gathered, ranks, op, tensor); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollective::sparseAllreduce(const at::Tensor& tensor,
                                                                       const c10d::ReduceOp& reduceOp) {
  // A sum, as with Gloo; of host tensors, whose indices and values are folded on the CPU.
  TORCH_CHECK(reduceOp.op_ == c10d::ReduceOp::SUM,
              "collective backend: allreduce of sparse tensors only works with ReduceOp.SUM, got ReduceOp ",
              static_cast<int>(reduceOp.op_));
  TORCH_CHECK(tensor.device().is_cpu(),
              "collective backend: allreduce of sparse tensors takes CPU tensors, got one on ", tensor.device());
  TORCH_CHECK(tensor.dim() <= kMaxSparseDims, "collective backend: allreduce of sparse tensors takes at most ",
              kMaxSparseDims, " dimensions, got ", tensor.dim());
  const int64_t ranks = getSize();
  collComm_t comm = comm_.handle();
  // Coalesced now (on the caller's thread, as the input is then): fewer non-zeros to move.
  at::Tensor input = tensor.coalesce();
  auto result = std::make_shared<at::Tensor>();
  auto issue = [=] {
    at::Tensor mine = sparseRecordOf(input);
    at::Tensor records = at::empty({ranks, kRecordLength}, at::kLong);
    checkResult(collAllGather(mine.data_ptr(), records.data_ptr(), kRecordLength, collInt64, comm, nullptr));
    checkSparseRecords(records, ranks, mine);
    std::vector<int64_t> nonZeros(ranks);
    for (int64_t r = 0; r < ranks; ++r) nonZeros[r] = records[r][0].item<int64_t>();
    const int64_t maxNonZeros = *std::max_element(nonZeros.begin(), nonZeros.end());
    at::Tensor indices = gatherRows(input._indices().contiguous(), 1, nonZeros, maxNonZeros, comm);
    at::Tensor values = gatherRows(input._values().contiguous(), 0, nonZeros, maxNonZeros, comm);
    *result = at::sparse_coo_tensor(indices, values, input.sizes(), input.options()).coalesce();
  };
  return enqueue(c10d::OpType::ALLREDUCE, {tensor}, {tensor}, nullptr, issue, [tensor, result] {
    // The caller's tensor becomes the sum (its sparse storage is replaced), as with Gloo.
    tensor.copy_(*result);
  });
}

}  // namespace torch_collective
