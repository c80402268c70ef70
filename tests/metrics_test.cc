// The metrics layer over prometheus-cpp: families by label values, collectors at scrape time,
// and the text exposition format the admin listener serves.

#include "obs/metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "obs/dashboard_feed.h"
#include "obs/events.h"
#include "obs/metric_reading.h"

namespace isolane {
namespace {

bool has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(Metrics, FamiliesRenderInTheTextFormat) {
  MetricsRegistry m;
  auto& requests = m.counter("isolane_requests_total", "Requests answered", {"app", "status"});
  requests.with({"hello", "200"}).inc();
  requests.with({"hello", "200"}).inc(2);
  requests.with({"echo", "500"}).inc();
  auto& open = m.gauge("isolane_streams_open", "Streams open");
  open.with({}).add(3);
  open.with({}).add(-1);
  auto& latency = m.histogram("isolane_latency_seconds", "Latency", {"app"}, {0.01, 0.1});
  latency.with({"hello"}).observe(0.005);
  latency.with({"hello"}).observe(0.05);
  latency.with({"hello"}).observe(5);
  EXPECT_EQ(requests.with({"hello", "200"}).value(), 3u);
  EXPECT_EQ(&requests.with({"hello", "200"}), &requests.with({"hello", "200"})) << "cached";
  std::string text = m.render();
  EXPECT_TRUE(has(text, "# HELP isolane_requests_total Requests answered")) << text;
  EXPECT_TRUE(has(text, "# TYPE isolane_requests_total counter")) << text;
  EXPECT_TRUE(has(text, "isolane_requests_total{app=\"hello\",status=\"200\"} 3")) << text;
  EXPECT_TRUE(has(text, "isolane_requests_total{app=\"echo\",status=\"500\"} 1")) << text;
  EXPECT_TRUE(has(text, "# TYPE isolane_streams_open gauge")) << text;
  EXPECT_TRUE(has(text, "isolane_streams_open 2")) << text;
  EXPECT_TRUE(has(text, "isolane_latency_seconds_bucket{app=\"hello\",le=\"0.01\"} 1")) << text;
  EXPECT_TRUE(has(text, "isolane_latency_seconds_bucket{app=\"hello\",le=\"0.1\"} 2")) << text;
  EXPECT_TRUE(has(text, "isolane_latency_seconds_bucket{app=\"hello\",le=\"+Inf\"} 3")) << text;
  EXPECT_TRUE(has(text, "isolane_latency_seconds_count{app=\"hello\"} 3")) << text;
}

TEST(Metrics, CollectorsAddFiguresReadAtScrapeTime) {
  MetricsRegistry m;
  int depth = 4;
  m.addCollector([&](Scrape& out) {
    out.family("isolane_queue_depth", "Requests waiting", "gauge");
    out.sample({}, depth);
    out.family("isolane_worker_cpu_seconds_total", "CPU", "counter");
    out.sample({{"slot", "0"}}, 1.5);
    out.sample({{"slot", "1"}}, 0);
  });
  std::string text = m.render();
  EXPECT_TRUE(has(text, "isolane_queue_depth 4")) << text;
  EXPECT_TRUE(has(text, "# TYPE isolane_worker_cpu_seconds_total counter")) << text;
  EXPECT_TRUE(has(text, "isolane_worker_cpu_seconds_total{slot=\"0\"} 1.5")) << text;
  depth = 9;
  EXPECT_TRUE(has(m.render(), "isolane_queue_depth 9"));
}

TEST(Metrics, LabelValuesAreEscaped) {
  MetricsRegistry m;
  m.counter("isolane_x_total", "x", {"app"}).with({"a\"b\\c\nd"}).inc();
  EXPECT_TRUE(has(m.render(), "isolane_x_total{app=\"a\\\"b\\\\c\\nd\"} 1")) << m.render();
}

// The dashboard's arithmetic: sums by label, and a histogram's quantiles over the observations
// made between two readings only (as Prometheus' histogram_quantile over a rate).
TEST(MetricReading, SumsByLabelAndQuantilesOfAWindow) {
  MetricsRegistry m;
  auto& requests = m.counter("isolane_requests_total", "Requests", {"app", "status"});
  auto& latency = m.histogram("isolane_latency_seconds", "Latency", {"app"}, {0.01, 0.1, 1});
  requests.with({"a", "200"}).inc(3);
  requests.with({"a", "503"}).inc(1);
  requests.with({"b", "200"}).inc(5);
  for (int i = 0; i < 100; ++i) latency.with({"a"}).observe(0.5);  // before the window
  MetricReading before = MetricReading::of(m);
  for (int i = 0; i < 90; ++i) latency.with({"a"}).observe(0.005);
  for (int i = 0; i < 10; ++i) latency.with({"a"}).observe(0.05);
  latency.with({"b"}).observe(0.5);
  MetricReading now = MetricReading::of(m);

  EXPECT_EQ(now.sum("isolane_requests_total"), 9);
  EXPECT_EQ(now.sum("isolane_requests_total", {{"app", "a"}}), 4);
  auto byApp = now.sumBy("isolane_requests_total", "app");
  EXPECT_EQ(byApp["a"], 4);
  EXPECT_EQ(byApp["b"], 5);
  EXPECT_EQ(now.sum("isolane_latency_seconds", {{"app", "a"}}), 200);  // a histogram's count
  EXPECT_EQ(now.sum("isolane_nothing"), 0);

  // In the window, a had 90 under 10 ms and 10 between 10 and 100 ms: the old 0.5 s ones are out.
  auto p50 = now.quantileSince(before, "isolane_latency_seconds", 0.5, {{"app", "a"}});
  ASSERT_TRUE(p50);
  EXPECT_NEAR(*p50, 0.01 * 50 / 90, 1e-9);
  auto p99 = now.quantileSince(before, "isolane_latency_seconds", 0.99, {{"app", "a"}});
  ASSERT_TRUE(p99);
  EXPECT_GT(*p99, 0.01);
  EXPECT_LE(*p99, 0.1);
  EXPECT_FALSE(now.quantileSince(now, "isolane_latency_seconds", 0.5, {{"app", "a"}}))
      << "no observation in an empty window";
  EXPECT_FALSE(now.quantileSince(before, "isolane_nothing", 0.5));
  EXPECT_EQ(ratePerSecond(10, 4, std::chrono::seconds(2)), 3);
  EXPECT_EQ(ratePerSecond(1, 4, std::chrono::seconds(2)), 0) << "a counter that went back";
}

// An event's detail may be an app's own words (a load error): it is cut, so a hostile app
// cannot make the ring (and each dashboard snapshot) large.
TEST(RecentEvents, KeepABoundedRingOfBoundedEvents) {
  recordEvent("crash", 3, 42, std::string(1'000'000, 'x'));
  std::vector<PoolEvent> events = recentEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, "crash");
  EXPECT_EQ(events.back().slot, 3);
  EXPECT_LE(events.back().detail.size(), kMaxEventDetail + 3);
  for (int i = 0; i < 300; ++i) recordEvent("spawn", i);
  events = recentEvents();
  EXPECT_EQ(events.size(), kRecentEvents);
  EXPECT_EQ(events.back().slot, 299);  // oldest first, newest last
}

// The feed gives a new page the latest snapshot at once, refuses pages past kMaxWatchers, drops
// the ones whose transport says they are gone, and after stop() takes none.
TEST(DashboardFeed, BoundsItsWatchersAndLetsGoOfThemOnStop) {
  MetricsRegistry m;
  m.counter("isolane_requests_total", "Requests", {"app"}).with({"a"}).inc(7);
  DashboardFeed feed(
      m,
      [](const MetricReading& now, const MetricReading&) {
        return nlohmann::json{{"requests", now.sum("isolane_requests_total")}};
      },
      std::chrono::milliseconds(20));
  std::atomic<int> delivered{0};
  std::string first;
  std::mutex firstMutex;
  for (std::size_t i = 0; i < DashboardFeed::kMaxWatchers; ++i) {
    ASSERT_TRUE(feed.watch([&](const std::string& message) {
      std::lock_guard<std::mutex> lock(firstMutex);
      if (first.empty()) first = message;
      ++delivered;
      return true;
    }));
  }
  EXPECT_FALSE(feed.watch([](const std::string&) { return true; })) << "one page too many";
  for (int i = 0; i < 200 && delivered < 64; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(delivered.load(), 64);
  EXPECT_NE(feed.latestMessage().find("data: {\"requests\":7.0}\n\n"), std::string::npos)
      << feed.latestMessage();
  {
    std::lock_guard<std::mutex> lock(firstMutex);
    EXPECT_TRUE(first.starts_with("retry: 2000\n\n")) << first;
  }
  feed.stop();
  EXPECT_FALSE(feed.watch([](const std::string&) { return true; }));
}

}  // namespace
}  // namespace isolane
