#pragma once
// Metrics, exposed in the Prometheus text format (0.0.4): prometheus-cpp (Debian's
// prometheus-cpp-dev) holds the counters, gauges and histograms and writes the text. This file
// is a thin layer over it that keeps call sites short: a family is addressed by its label values
// in the order of its label names, the metric found is cached so hot paths look it up once, and
// collectors add figures read at scrape time (per-worker gauges, queue depth).
//
// Thread rule: every method is safe from any thread. Updating a metric is prometheus-cpp's
// atomic; looking up a label set takes the family's lock, so hot paths keep the returned
// reference.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace isolane {

class Counter {
 public:
  explicit Counter(prometheus::Counter& native) : native_(native) {}
  void inc(std::uint64_t n = 1) { native_.Increment(static_cast<double>(n)); }
  std::uint64_t value() const { return static_cast<std::uint64_t>(native_.Value()); }

 private:
  prometheus::Counter& native_;
};

class Gauge {
 public:
  explicit Gauge(prometheus::Gauge& native) : native_(native) {}
  void set(double v) { native_.Set(v); }
  void add(double d) { native_.Increment(d); }  // d may be negative
  double value() const { return native_.Value(); }

 private:
  prometheus::Gauge& native_;
};

class Histogram {
 public:
  explicit Histogram(prometheus::Histogram& native) : native_(native) {}
  void observe(double v) { native_.Observe(v); }

 private:
  prometheus::Histogram& native_;
};

// Buckets for request latency, in seconds.
std::vector<double> latencyBuckets();

template <typename Metric>
class Family {
 public:
  // Makes the metric of one label set (prometheus-cpp's Family::Add, with its arguments).
  using Make = std::function<std::unique_ptr<Metric>(const prometheus::Labels&)>;

  Family(std::vector<std::string> labels, Make make)
      : labels_(std::move(labels)), make_(std::move(make)) {}

  // The metric for these label values (in the order of the family's label names). The
  // label-less one, once made, is returned without the lock (metrics are never removed).
  Metric& with(const std::vector<std::string>& values) {
    if (values.empty()) {
      if (Metric* only = unlabelled_.load(std::memory_order_acquire)) return *only;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = metrics_[values];
    if (!slot) {
      prometheus::Labels labels;
      for (std::size_t i = 0; i < labels_.size() && i < values.size(); ++i) {
        labels[labels_[i]] = values[i];
      }
      slot = make_(labels);
    }
    if (values.empty()) unlabelled_.store(slot.get(), std::memory_order_release);
    return *slot;
  }

 private:
  const std::vector<std::string> labels_;
  const Make make_;
  std::mutex mutex_;  // guards metrics_
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> metrics_;
  std::atomic<Metric*> unlabelled_{nullptr};  // metrics_[{}], once made
};

// What a collector adds at scrape time: families of samples, in prometheus-cpp's form.
class Scrape {
 public:
  // Starts a family; type is "gauge" or "counter".
  void family(const std::string& name, const std::string& help, const char* type);
  // Adds a sample to the family started last.
  void sample(const std::vector<std::pair<std::string, std::string>>& labels, double value);

  std::vector<prometheus::MetricFamily> families;
};

using Collector = std::function<void(Scrape& out)>;

class MetricsRegistry {
 public:
  MetricsRegistry();

  Family<Counter>& counter(const std::string& name, const std::string& help,
                           std::vector<std::string> labels = {});
  Family<Gauge>& gauge(const std::string& name, const std::string& help,
                       std::vector<std::string> labels = {});
  Family<Histogram>& histogram(const std::string& name, const std::string& help,
                               std::vector<std::string> labels, std::vector<double> bounds);
  void addCollector(Collector collector);

  // Every family and every collector's, in the text exposition format.
  std::string render() const;
  // The same figures as data (the dashboard reads them).
  std::vector<prometheus::MetricFamily> collect() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex mutex_;  // guards the lists below
  std::vector<std::unique_ptr<Family<Counter>>> counters_;
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_;
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_;
  std::vector<Collector> collectors_;
};

}  // namespace isolane
