// RequestTable: an isolate's requests in flight and their deadlines, as bookkeeping with plain
// structs (no isolate).

#include "worker/request_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace isolane {
namespace {

using namespace std::chrono_literals;

struct Request {
  std::uint64_t id = 0;
  SteadyTime deadline{};
  std::string what;
};
using Table = RequestTable<Request>;

const SteadyTime kT0 = SteadyTime{} + 1h;

TEST(RequestTable, IdsOfItsOwnStayApartFromTheSubmittersAndExactInJavaScript) {
  Table t;
  std::uint64_t first = t.ownId();
  EXPECT_EQ(first, Table::kOwnIds);
  EXPECT_EQ(t.ownId(), first + 1);
  EXPECT_FALSE(Table::isSubmitterId(first));
  EXPECT_FALSE(Table::isSubmitterId(0));
  EXPECT_TRUE(Table::isSubmitterId(1));
  EXPECT_TRUE(Table::isSubmitterId(Table::kOwnIds - 1));
  EXPECT_LT(first, std::uint64_t{1} << 53) << "a double holds it exactly";
}

TEST(RequestTable, AddFindTake) {
  Table t;
  Request& r = t.add(7, Request{0, {}, "seven"}, kT0 + 5s);
  EXPECT_EQ(r.id, 7u);
  EXPECT_EQ(r.deadline, kT0 + 5s);
  EXPECT_TRUE(t.contains(7));
  ASSERT_NE(t.find(7), nullptr);
  EXPECT_EQ(t.find(7)->what, "seven");
  EXPECT_EQ(t.find(8), nullptr);
  EXPECT_EQ(t.size(), 1u);
  std::optional<Request> taken = t.take(7);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->what, "seven");
  EXPECT_FALSE(t.contains(7));
  EXPECT_FALSE(t.take(7)) << "taken once";
  EXPECT_FALSE(t.nextDeadline()) << "its deadline left with it";
}

TEST(RequestTable, DueRequestsComeInDeadlineOrderAndOnlyOnce) {
  Table t;
  t.add(1, Request{}, kT0 + 3s);
  t.add(2, Request{}, kT0 + 1s);
  t.add(3, Request{}, kT0 + 2s);
  t.add(4, Request{}, kT0 + 10s);
  EXPECT_EQ(t.nextDeadline(), kT0 + 1s);
  EXPECT_EQ(t.takeDue(kT0), 0u) << "nothing due yet";
  EXPECT_EQ(t.takeDue(kT0 + 5s), 2u);
  EXPECT_EQ(t.takeDue(kT0 + 5s), 3u);
  EXPECT_EQ(t.takeDue(kT0 + 5s), 1u);
  EXPECT_EQ(t.takeDue(kT0 + 5s), 0u);
  EXPECT_TRUE(t.contains(2)) << "a due request stays until the caller ends it";
  EXPECT_EQ(t.find(2)->deadline, Table::kNoDeadline);
  EXPECT_EQ(t.nextDeadline(), kT0 + 10s);
  t.take(2);  // ending it after its deadline went touches nothing else
  EXPECT_EQ(t.nextDeadline(), kT0 + 10s);
}

TEST(RequestTable, AMovedDeadlineReplacesTheOld) {
  Table t;
  Request& r = t.add(1, Request{}, kT0 + 1s);
  t.setDeadline(r, kT0 + 60s);  // a stream's limits replace the wall timeout
  EXPECT_EQ(t.takeDue(kT0 + 30s), 0u);
  EXPECT_EQ(t.nextDeadline(), kT0 + 60s);
  EXPECT_EQ(t.takeDue(kT0 + 60s), 1u);
}

TEST(RequestTable, APausedClockHasNoDeadlineUntilItResumes) {
  Table t;
  Request& r = t.add(1, Request{}, kT0 + 1s);
  t.clearDeadline(r);  // waiting on a tool call
  EXPECT_FALSE(t.nextDeadline());
  EXPECT_EQ(t.takeDue(kT0 + 1h), 0u);
  t.setDeadline(r, kT0 + 2h);
  EXPECT_EQ(t.nextDeadline(), kT0 + 2h);
  EXPECT_EQ(t.takeDue(kT0 + 2h), 1u);
}

TEST(RequestTable, RequestsWithTheSameDeadlineAreEachDue) {
  Table t;
  t.add(1, Request{}, kT0);
  t.add(2, Request{}, kT0);
  std::vector<std::uint64_t> due;
  while (std::uint64_t id = t.takeDue(kT0)) due.push_back(id);
  std::sort(due.begin(), due.end());
  EXPECT_EQ(due, (std::vector<std::uint64_t>{1, 2}));
  std::vector<std::uint64_t> ids = t.ids();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{1, 2}));
}

}  // namespace
}  // namespace isolane
