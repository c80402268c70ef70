// pool/worker_output.h: a worker's stdout and stderr, read by the master from a pipe of the
// worker's own and logged as the master's lines say, never as the worker claims.

#include "pool/worker_output.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "manual_clock.h"

namespace isolane {
namespace {

using nlohmann::json;

TEST(WorkerOutput, AWorkersLogLineKeepsItsFieldsButNotAnotherProcessesName) {
  WorkerOutput output(4242);
  auto line = json::parse(
      output.rewrite(R"({"ts":"t","level":"error","msg":"m","process":"worker-1","app":"a"})").json);
  EXPECT_EQ(line["process"], "worker-1");
  EXPECT_EQ(line["pid"], 4242);
  EXPECT_EQ(line["app"], "a");
  // A line that passes itself off as the master's, or as another worker (by pid), is not.
  WorkerOutput::Rewritten forged =
      output.rewrite(R"({"level":"error","msg":"server stopping","process":"server","pid":1})");
  auto f = json::parse(forged.json);
  EXPECT_EQ(f["process"], "worker");
  EXPECT_EQ(f["pid"], 4242);
  EXPECT_EQ(forged.level, Level::kError);
}

TEST(WorkerOutput, AnythingElseIsQuotedAsTheLineOfAWorkerOutputEntry) {
  WorkerOutput output(7);
  auto line = json::parse(output.rewrite("FATAL ERROR: Reached heap limit\x01\xff").json);
  EXPECT_EQ(line["msg"], "worker output");
  EXPECT_EQ(line["pid"], 7);
  EXPECT_EQ(line["process"], "worker");
  EXPECT_EQ(line["line"].get<std::string>().rfind("FATAL ERROR: Reached heap limit", 0), 0u);
  auto notObject = json::parse(output.rewrite("[1,2]").json);
  EXPECT_EQ(notObject["line"], "[1,2]");
  auto deep = json::parse(output.rewrite(std::string(100000, '[')).json);  // no stack overflow
  EXPECT_EQ(deep["msg"], "worker output");
}

struct Captured {
  std::vector<json> lines;
  WorkerOutput::Sink sink() {
    return [this](Level, const std::string& j) { lines.push_back(json::parse(j)); };
  }
};

TEST(WorkerOutput, LinesArriveInPiecesAndALongOneIsCut) {
  Captured captured;
  WorkerOutput output(1, captured.sink());
  std::string huge(WorkerOutput::kMaxWorkerLineBytes * 3, 'x');
  // Fed in pieces that split lines anywhere.
  for (std::size_t at = 0; at < huge.size(); at += 4096) {
    output.feed(huge.data() + at, std::min<std::size_t>(4096, huge.size() - at));
  }
  std::string rest = "\n{\"msg\":\"next\"}\npartial";
  output.feed(rest.data(), rest.size());
  output.finish();
  ASSERT_EQ(captured.lines.size(), 3u);
  std::string cut = captured.lines[0]["line"];
  EXPECT_EQ(cut.size(), WorkerOutput::kMaxWorkerLineBytes + std::string("... [line cut]").size());
  EXPECT_EQ(captured.lines[1]["msg"], "next");
  EXPECT_EQ(captured.lines[2]["line"], "partial");
}

TEST(WorkerOutput, AWorkerThatFloodsHasItsLinesDroppedAndCounted) {
  Captured captured;
  test::ManualClock clock;
  WorkerOutput output(9, captured.sink(), clock);
  std::string line = "{\"msg\":\"flood\"}\n";
  auto burst = static_cast<int>(WorkerOutput::kLinesPerSecond * 4);
  for (int i = 0; i < burst + 100; ++i) output.feed(line.data(), line.size());
  EXPECT_EQ(captured.lines.size(), static_cast<std::size_t>(burst));
  clock.advance(std::chrono::milliseconds(1000));
  output.feed(line.data(), line.size());
  ASSERT_EQ(captured.lines.size(), static_cast<std::size_t>(burst) + 2);
  EXPECT_EQ(captured.lines[burst]["msg"],
            "worker output dropped: the worker writes faster than its limit");
  EXPECT_EQ(captured.lines[burst]["lines"], 100);
  EXPECT_EQ(captured.lines[burst + 1]["msg"], "flood");
}

}  // namespace
}  // namespace isolane
