#include "tools/collsim/tables.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/error.h"
#include "src/plan/planner.h"

namespace collsim {
namespace {

std::string shapeCell(const JobShape& s) { return std::to_string(s.nranks); }

std::vector<std::string> shapeHeader() { return {"ranks", "hosts", "ranks/host"}; }
std::vector<std::string> shapeCells(const JobShape& s) {
  return {std::to_string(s.nranks), std::to_string(s.nhosts), std::to_string(s.ranksPerHost())};
}

// The all-reduce algorithms studied in any survey, in table order.
std::vector<coll::Algo> allReduceAlgos(const std::vector<ShapeSurvey>& surveys) {
  std::set<coll::Algo> seen;
  for (const ShapeSurvey& s : surveys)
    for (const SizeStudies& size : s.allReduce)
      for (const CallStudy& c : size.studies) seen.insert(c.algo);
  std::vector<coll::Algo> algos;
  for (const coll::AlgorithmRow& row : coll::algorithmTable())
    if (seen.count(row.id)) algos.push_back(row.id);
  return algos;
}

std::string peersCell(int peers, int netPeers) { return coll::formatString("%d (%d net)", peers, netPeers); }

std::string holdingCell(const Holdings& h) {
  return formatBytes(static_cast<double>(h.fifoBytes)) + ", " + std::to_string(h.sockets) + " sockets";
}

Table peersTable(const std::vector<ShapeSurvey>& surveys, const std::vector<coll::Algo>& algos) {
  Table t;
  t.title = "All-reduce: connections a rank holds (most over the examined ranks; on another host in parentheses)";
  t.header = shapeHeader();
  for (coll::Algo a : algos) t.header.push_back(coll::algoName(a));
  t.header.push_back("eager (today)");
  for (const ShapeSurvey& s : surveys) {
    std::vector<std::string> row = shapeCells(s.shape);
    for (coll::Algo a : algos) {
      int peers = 0, net = 0;  // over the sizes: a lazy transport keeps what any call opened
      for (const SizeStudies& size : s.allReduce)
        if (const CallStudy* c = size.of(a)) peers = std::max(peers, c->maxPeers), net = std::max(net, c->maxNetPeers);
      row.push_back(peersCell(peers, net));
    }
    row.push_back(peersCell(s.eager.peers, s.eager.netPeers));
    t.rows.push_back(row);
  }
  return t;
}

Table memoryTable(const std::vector<ShapeSurvey>& surveys, const std::vector<coll::Algo>& algos,
                  const TransportShape& tr) {
  Table t;
  t.title = coll::formatString(
      "FIFO memory and sockets per rank (the worst examined rank; %s slots, %d deep in shared memory, %d per "
      "direction on sockets, %d sockets per peer)",
      formatBytes(static_cast<double>(tr.slotBytes)).c_str(), tr.shmFifoDepth, tr.netFifoDepth, tr.socketsPerPeer);
  t.header = shapeHeader();
  for (coll::Algo a : algos) t.header.push_back(std::string(coll::algoName(a)) + " only");
  t.header.push_back("the planner's choices");
  t.header.push_back("eager (today)");
  for (const ShapeSurvey& s : surveys) {
    std::vector<std::string> row = shapeCells(s.shape);
    for (coll::Algo a : algos) {
      Holdings worst;
      for (const SizeStudies& size : s.allReduce)
        if (const CallStudy* c = size.of(a); c != nullptr && c->worstHoldings.fifoBytes >= worst.fifoBytes)
          worst = c->worstHoldings;
      row.push_back(holdingCell(worst));
    }
    row.push_back(holdingCell(s.lazyChosen));
    row.push_back(holdingCell(s.eager));
    t.rows.push_back(row);
  }
  return t;
}

Table timeTable(const std::vector<ShapeSurvey>& surveys, const std::vector<coll::Algo>& algos, size_t sizeIndex) {
  Table t;
  const size_t bytes = surveys.front().allReduce[sizeIndex].bytes;
  t.title = "All-reduce of " + formatBytes(static_cast<double>(bytes)) + ": modelled time per algorithm";
  t.header = shapeHeader();
  for (coll::Algo a : algos) t.header.push_back(coll::algoName(a));
  t.header.push_back("chosen");
  for (const ShapeSurvey& s : surveys) {
    std::vector<std::string> row = shapeCells(s.shape);
    const SizeStudies& size = s.allReduce[sizeIndex];
    for (coll::Algo a : algos) {
      const CallStudy* c = size.of(a);
      row.push_back(c == nullptr ? "-" : formatMicros(c->modelUs) + (c->eligible ? "" : " (not eligible)"));
    }
    row.push_back(coll::algoName(size.chosen));
    t.rows.push_back(row);
  }
  return t;
}

Table messagesTable(const std::vector<ShapeSurvey>& surveys, const std::vector<coll::Algo>& algos) {
  Table t;
  t.title =
      "All-reduce: messages (slots) and bytes a rank sends, most over the examined ranks, per size; where every rank "
      "was walked, the bytes leaving the busiest host over the network in parentheses";
  t.header = shapeHeader();
  for (coll::Algo a : algos) t.header.push_back(coll::algoName(a));
  for (const ShapeSurvey& s : surveys) {
    std::vector<std::string> row = shapeCells(s.shape);
    for (coll::Algo a : algos) {
      std::string cell;
      for (const SizeStudies& size : s.allReduce) {
        const CallStudy* c = size.of(a);
        if (c == nullptr) continue;
        cell += (cell.empty() ? "" : "; ") + std::to_string(c->maxMessages) + " msgs, " +
                formatBytes(static_cast<double>(c->maxBytes));
        if (c->busiestHostNetBytes > 0)
          cell += " (host: " + formatBytes(static_cast<double>(c->busiestHostNetBytes)) + ")";
      }
      row.push_back(cell.empty() ? "-" : cell);
    }
    t.rows.push_back(row);
  }
  return t;
}

Table choiceTable(const std::vector<ShapeSurvey>& surveys, const TransportShape& transports) {
  Table t;
  t.title = "All-reduce: the planner's choice per size (by its cost model)";
  t.header = shapeHeader();
  for (size_t bytes : choiceSizes()) t.header.push_back(formatBytes(static_cast<double>(bytes)));
  for (const ShapeSurvey& s : surveys) {
    const coll::PlanContext ctx = planContextFor(s.shape, transports);
    std::vector<std::string> row = shapeCells(s.shape);
    for (size_t bytes : choiceSizes())
      row.push_back(
          coll::algoName(coll::planCall(callOfBytes(coll::CollType::kAllReduce, bytes, s.shape.nranks), ctx).algo));
    t.rows.push_back(row);
  }
  return t;
}

Table othersTable(const std::vector<ShapeSurvey>& surveys) {
  Table t;
  t.title = "Other collectives: the planner's choice and the most connections a rank holds for it, per size";
  t.header = shapeHeader();
  for (coll::CollType type : otherCollectiveTypes()) t.header.push_back(coll::collTypeName(type));
  for (const ShapeSurvey& s : surveys) {
    std::vector<std::string> row = shapeCells(s.shape);
    for (coll::CollType type : otherCollectiveTypes()) {
      std::string cell;
      for (const OtherCollective& o : s.others)
        if (o.type == type)
          cell += (cell.empty() ? "" : "; ") + std::string(coll::algoName(o.study.algo)) + " " +
                  std::to_string(o.study.maxPeers);
      row.push_back(cell);
    }
    t.rows.push_back(row);
  }
  return t;
}

Table bootstrapTable(const std::vector<ShapeSurvey>& surveys) {
  Table t;
  t.title = "Bootstrap all-gather of one blob per rank: through the store (today) and in log2(n) rounds between ranks";
  t.header = {"ranks",
              "store: requests per rank",
              "store: requests at the store",
              "rounds: rounds",
              "rounds: peers per rank",
              "rounds: messages per rank",
              "rounds: store requests per rank",
              "rounds: requests at the store"};
  std::set<int> done;
  for (const ShapeSurvey& s : surveys) {
    if (!done.insert(s.shape.nranks).second) continue;  // the same for every host count
    const BootstrapCost& a = s.storeBootstrap;
    const BootstrapCost& b = s.logBootstrap;
    t.rows.push_back({shapeCell(s.shape), std::to_string(a.storeRequestsPerRank), std::to_string(a.storeRequestsTotal),
                      std::to_string(b.rounds), std::to_string(b.peersPerRank), std::to_string(b.messagesPerRank),
                      std::to_string(b.storeRequestsPerRank), std::to_string(b.storeRequestsTotal)});
  }
  return t;
}

}  // namespace

const std::vector<size_t>& choiceSizes() {
  static const std::vector<size_t> sizes = {8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, size_t{1} << 30};
  return sizes;
}

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return bytes == static_cast<double>(static_cast<long long>(bytes))
             ? coll::formatString("%lld %s", static_cast<long long>(bytes), units[u])
             : coll::formatString("%.1f %s", bytes, units[u]);
}

std::string formatMicros(double us) {
  if (us < 1000) return coll::formatString("%.0f us", us);
  if (us < 1e6) return coll::formatString("%.1f ms", us / 1e3);
  return coll::formatString("%.2f s", us / 1e6);
}

std::string renderTable(const Table& table, bool markdown) {
  std::string out;
  if (markdown) {
    out += "**" + table.title + "**\n\n";
    auto line = [&](const std::vector<std::string>& cells) {
      out += "|";
      for (const std::string& c : cells) out += " " + c + " |";
      out += "\n";
    };
    line(table.header);
    out += "|";
    for (size_t i = 0; i < table.header.size(); ++i) out += " --- |";
    out += "\n";
    for (const auto& row : table.rows) line(row);
    return out;
  }
  std::vector<size_t> width(table.header.size(), 0);
  for (size_t i = 0; i < width.size(); ++i) width[i] = table.header[i].size();
  for (const auto& row : table.rows)
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i)
      out += cells[i] + std::string(width[i] - cells[i].size() + (i + 1 < cells.size() ? 2 : 0), ' ');
    out += "\n";
  };
  out += table.title + "\n";
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

std::vector<Table> surveyTables(const std::vector<ShapeSurvey>& surveys, const TransportShape& transports) {
  std::vector<Table> tables;
  if (surveys.empty()) return tables;
  const std::vector<coll::Algo> algos = allReduceAlgos(surveys);
  tables.push_back(choiceTable(surveys, transports));
  for (size_t i = 0; i < surveys.front().allReduce.size(); ++i) tables.push_back(timeTable(surveys, algos, i));
  tables.push_back(peersTable(surveys, algos));
  tables.push_back(memoryTable(surveys, algos, transports));
  tables.push_back(messagesTable(surveys, algos));
  if (!surveys.front().others.empty()) tables.push_back(othersTable(surveys));
  tables.push_back(bootstrapTable(surveys));
  return tables;
}

}  // namespace collsim
