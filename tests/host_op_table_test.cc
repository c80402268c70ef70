// HostOpTable: an isolate's host operations as bookkeeping, with string callbacks (no isolate).

#include "worker/host_op_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace isolane {
namespace {

struct App {};
using Table = HostOpTable<App, std::string>;

std::vector<std::uint64_t> sorted(std::vector<std::uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(HostOpTable, CountsEachRequestsOperationsUntilTheyEnd) {
  Table t;
  App app;
  t.add(1, &app, 7, "fetch", HostOpKind::kFetch);
  t.add(2, &app, 7, "service", HostOpKind::kService);
  t.add(3, &app, 8, "tool", HostOpKind::kTool);
  t.add(4, &app, 0, "top level", HostOpKind::kFetch);  // outside any request: not counted
  EXPECT_EQ(t.countOf(7), 2u);
  EXPECT_EQ(t.countOf(8), 1u);
  EXPECT_EQ(t.countOf(0), 0u);
  EXPECT_EQ(t.size(), 4u);

  auto taken = t.take(1);  // its last event
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->callbacks, "fetch");
  EXPECT_EQ(taken->kind, HostOpKind::kFetch);
  EXPECT_EQ(t.countOf(7), 1u);
  EXPECT_EQ(t.find(1), nullptr);
  EXPECT_FALSE(t.take(1));  // once
  ASSERT_NE(t.find(3), nullptr);
  EXPECT_EQ(t.find(3)->request, 8u);
}

TEST(HostOpTable, ARequestsEndRemovesItsOperationsOnlyAndSaysWhichToEnd) {
  Table t;
  App app;
  t.add(1, &app, 7, "a", HostOpKind::kFetch);
  t.add(2, &app, 7, "b", HostOpKind::kService);
  t.add(3, &app, 9, "c", HostOpKind::kFetch);
  std::vector<std::uint64_t> fetches;
  t.forEachOfRequest(7, [&](std::uint64_t id, const Table::Op& op) {
    if (op.kind == HostOpKind::kFetch) fetches.push_back(id);
  });
  EXPECT_EQ(fetches, std::vector<std::uint64_t>{1});
  EXPECT_EQ(t.size(), 3u);  // looked at, not removed

  std::vector<std::uint64_t> ended;
  t.removeOfRequest(7, [&](std::uint64_t id, const Table::Op&) { ended.push_back(id); });
  EXPECT_EQ(sorted(ended), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(t.countOf(7), 0u);
  EXPECT_EQ(t.size(), 1u);
  ASSERT_NE(t.find(3), nullptr);

  ended.clear();
  t.removeOfRequest(7, [&](std::uint64_t id, const Table::Op&) { ended.push_back(id); });
  EXPECT_TRUE(ended.empty());  // nothing left of it
}

TEST(HostOpTable, AnAppsOperationsGoWithIt) {
  Table t;
  App gone, stays;
  t.add(1, &gone, 3, "a", HostOpKind::kFetch);
  t.add(2, &gone, 0, "b", HostOpKind::kService);
  t.add(3, &stays, 4, "c", HostOpKind::kTool);
  std::vector<std::uint64_t> ended;
  t.removeOfOwner(&gone, [&](std::uint64_t id, const Table::Op&) { ended.push_back(id); });
  EXPECT_EQ(sorted(ended), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(t.countOf(3), 0u);
  EXPECT_EQ(t.countOf(4), 1u);
  EXPECT_EQ(t.size(), 1u);
  t.clearAll();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.countOf(4), 0u);
}

}  // namespace
}  // namespace isolane
