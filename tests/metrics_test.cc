// The metrics layer over prometheus-cpp: families by label values, collectors at scrape time,
// and the text exposition format the admin listener serves.

#include "obs/metrics.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace isolane
