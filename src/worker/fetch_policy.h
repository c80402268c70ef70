#pragma once
// FetchPolicy: which addresses an app's outbound fetch() may reach. By default only public
// addresses: no loopback, private, link-local (cloud metadata lives there), carrier-grade NAT,
// multicast, unspecified or other reserved ranges. An app's allow list (config `fetch_allow`)
// names exceptions: a host name ("api.internal"), an address ("127.0.0.1", "::1"), either with
// a port ("127.0.0.1:8080"), or "*" for everything.
//
// The check runs on the resolved addresses and the connection goes to the checked address, so a
// name that resolves to a private address is refused however it is spelled.

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace isolane {

class FetchPolicy {
 public:
  FetchPolicy() = default;
  explicit FetchPolicy(std::vector<std::string> allow) : allow_(std::move(allow)) {}

  // Empty when `address` (reached as `host`:`port`) is allowed; otherwise why not, in words an
  // operator can act on.
  std::optional<std::string> refuse(const std::string& host, std::uint16_t port,
                                    const boost::asio::ip::address& address) const;

  // The range a non-public address belongs to ("loopback (127.0.0.0/8)"), or empty if public.
  static std::optional<std::string> reservedRange(const boost::asio::ip::address& address);

 private:
  bool allowed(const std::string& host, std::uint16_t port, const std::string& address) const;

  std::vector<std::string> allow_;
};

}  // namespace isolane
