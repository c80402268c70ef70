#include "worker/fetch_policy.h"

#include <algorithm>
#include <cctype>

namespace isolane {
namespace {

struct Range4 {
  std::uint32_t base;
  int bits;
  const char* name;
};

// RFC 6890 special-purpose and friends: everything an app must not reach by default.
const Range4 kReserved4[] = {
    {0x00000000, 8, "unspecified (0.0.0.0/8)"},
    {0x0A000000, 8, "private (10.0.0.0/8)"},
    {0x64400000, 10, "carrier-grade NAT (100.64.0.0/10)"},
    {0x7F000000, 8, "loopback (127.0.0.0/8)"},
    {0xA9FE0000, 16, "link-local and cloud metadata (169.254.0.0/16)"},
    {0xAC100000, 12, "private (172.16.0.0/12)"},
    {0xC0000000, 24, "IETF protocol assignments (192.0.0.0/24)"},
    {0xC0000200, 24, "documentation (192.0.2.0/24)"},
    {0xC0A80000, 16, "private (192.168.0.0/16)"},
    {0xC6120000, 15, "benchmarking (198.18.0.0/15)"},
    {0xC6336400, 24, "documentation (198.51.100.0/24)"},
    {0xCB007100, 24, "documentation (203.0.113.0/24)"},
    {0xE0000000, 4, "multicast (224.0.0.0/4)"},
    {0xF0000000, 4, "reserved (240.0.0.0/4)"},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::optional<std::string> FetchPolicy::reservedRange(const boost::asio::ip::address& address) {
  if (address.is_v6()) {
    auto v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
      return reservedRange(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6));
    }
    auto b = v6.to_bytes();
    if (v6.is_loopback()) return "loopback (::1)";
    if (v6.is_unspecified()) return "unspecified (::)";
    if (v6.is_link_local()) return "link-local (fe80::/10)";
    if (v6.is_multicast()) return "multicast (ff00::/8)";
    if ((b[0] & 0xFE) == 0xFC) return "unique local (fc00::/7)";
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "documentation (2001:db8::/32)";
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return "NAT64 (64:ff9b::/96)";
    return std::nullopt;
  }
  std::uint32_t ip = address.to_v4().to_uint();
  for (const Range4& r : kReserved4) {
    std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((ip & mask) == r.base) return std::string(r.name);
  }
  return std::nullopt;
}

bool FetchPolicy::allowed(const std::string& host, std::uint16_t port,
                          const std::string& address) const {
  std::string h = lower(host);
  std::string p = std::to_string(port);
  for (const std::string& entry : allow_) {
    std::string e = lower(entry);
    if (e == "*" || e == h || e == address || e == h + ":" + p || e == address + ":" + p ||
        e == "[" + address + "]:" + p) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> FetchPolicy::refuse(const std::string& host, std::uint16_t port,
                                               const boost::asio::ip::address& address) const {
  auto range = reservedRange(address);
  if (!range) return std::nullopt;
  if (allowed(host, port, address.to_string())) return std::nullopt;
  return host + " resolves to " + address.to_string() + ", a " + *range +
         " address; apps may reach only public addresses unless the app's fetch_allow lists it";
}

}  // namespace isolane
