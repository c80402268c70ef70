#pragma once
// Metrics in the Prometheus text exposition format (version 0.0.4). Hand-written: Debian 12
// packages no Prometheus client library for C++, and what we need is small: counters, gauges and
// histograms in label families, plus collectors that add figures read at scrape time.
//
// Thread rule: every method is safe from any thread. Updating a metric is a relaxed atomic;
// looking up a label set takes the family's lock, so hot paths keep the returned reference.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace isolane {

class Counter {
 public:
  void inc(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double d) {
    double cur = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(cur, cur + d, std::memory_order_relaxed)) {
    }
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  // Cumulative counts per bound, then +Inf; and the sum.
  std::vector<std::uint64_t> cumulative() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // one per bound, plus +Inf
  std::atomic<double> sum_{0};
};

// Buckets for request latency, in seconds.
std::vector<double> latencyBuckets();

template <typename Metric>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> labels,
         std::function<std::unique_ptr<Metric>()> make)
      : name_(std::move(name)), help_(std::move(help)), labels_(std::move(labels)),
        make_(std::move(make)) {}

  // The metric for these label values (in the order of the family's label names).
  Metric& with(const std::vector<std::string>& values) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = metrics_[values];
    if (!slot) slot = make_();
    return *slot;
  }

  void render(std::string& out, const char* type) const;

 private:
  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const std::function<std::unique_ptr<Metric>()> make_;
  mutable std::mutex mutex_;  // guards metrics_
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> metrics_;
};

// Appends figures that are read at scrape time (per-worker gauges, queue depth).
using Collector = std::function<void(std::string& out)>;

class MetricsRegistry {
 public:
  Family<Counter>& counter(const std::string& name, const std::string& help,
                           std::vector<std::string> labels = {});
  Family<Gauge>& gauge(const std::string& name, const std::string& help,
                       std::vector<std::string> labels = {});
  Family<Histogram>& histogram(const std::string& name, const std::string& help,
                               std::vector<std::string> labels, std::vector<double> bounds);
  void addCollector(Collector collector);

  std::string render() const;

 private:
  mutable std::mutex mutex_;  // guards the lists below
  std::vector<std::unique_ptr<Family<Counter>>> counters_;
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_;
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_;
  std::vector<Collector> collectors_;
};

// Writes one sample line: name{a="x",b="y"} value.
void writeSample(std::string& out, const std::string& name,
                 const std::vector<std::pair<std::string, std::string>>& labels, double value);
void writeHeader(std::string& out, const std::string& name, const std::string& help,
                 const char* type);

}  // namespace isolane
